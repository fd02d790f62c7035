// A transport file that reaches up into group/: include_order_test.sh must
// refuse it (the test that shows the check can fail).
#include "group/group.h"
#include "transport/transport.h"
