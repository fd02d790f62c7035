/* A C program against the agent's release archive (agent_c.sh): forms the
 * group from TF_CONFIG, all-reduces 1000 floats and checks the sums. */
#include <ringmaster/ringmaster.h>
#include <stdio.h>

int main(void) {
  rm_communicator* comm = NULL;
  if (rm_communicator_create_from_env(&comm) != RM_OK) {
    fprintf(stderr, "allreduce: forming the group: %s\n", rm_last_error());
    return 1;
  }
  const int rank = rm_rank(comm), size = rm_size(comm);
  float v[1000];
  for (int i = 0; i < 1000; ++i) v[i] = (float)((rank + 1) * i);
  rm_tensor t = {v, 1000, RM_FLOAT32};
  rm_options o = RM_OPTIONS_INIT;
  o.timeout_seconds = 60;
  if (rm_allreduce(comm, &t, 1, RM_SUM, &o) != RM_OK) {
    fprintf(stderr, "allreduce: %s\n", rm_last_error());
    return 1;
  }
  const float factor = (float)(size * (size + 1) / 2);
  for (int i = 0; i < 1000; ++i) {
    if (v[i] != factor * (float)i) {
      fprintf(stderr, "allreduce: rank %d: element %d is %g, want %g\n", rank, i, v[i], factor * (float)i);
      return 1;
    }
  }
  printf("allreduce: rank %d of %d (%s): the sums are right\n", rank, size, rm_task_name(comm, rank));
  rm_communicator_destroy(comm);
  return 0;
}
