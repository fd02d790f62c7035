/* The same through the C API (ringmaster.h). */
#include <stdio.h>

#include "ringmaster/ringmaster.h"

int main(void) {
  rm_communicator* comm = NULL;
  if (rm_communicator_create_from_env(&comm) != RM_OK) {
    fprintf(stderr, "%s\n", rm_last_error());
    return 1;
  }
  int64_t v[3] = {rm_rank(comm) + 1, 10, -1};
  rm_tensor t = {v, 3, RM_INT64};
  rm_options o = rm_default_options();
  o.timeout_seconds = 30;
  if (rm_allreduce(comm, &t, 1, RM_SUM, &o) != RM_OK) {
    fprintf(stderr, "%s\n", rm_last_error());
    rm_communicator_destroy(comm);
    return 1;
  }
  int n = rm_size(comm);
  int ok = v[0] == (int64_t)n * (n + 1) / 2 && v[1] == 10 * n && v[2] == -n;
  printf("rank %d of %d: C all-reduce %s\n", rm_rank(comm), n, ok ? "ok" : "WRONG");
  rm_communicator_destroy(comm);
  return ok ? 0 : 1;
}
