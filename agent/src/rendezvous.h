// Forming the group: kept as the one include of the engine and the tests;
// the parts live in bootstrap/ (docs/agent.md, "Layout"): the seam
// (bootstrap.h), the pure formation core (formation_state.h, join_checks.h,
// join_rules.h, mesh_ledger.h) and its shells (the gRPC control service and
// server, the followers' client, the data mesh).
#pragma once

#include "bootstrap/control_server.h"
#include "bootstrap/control_service.h"
#include "bootstrap/join_checks.h"
#include "bootstrap/mesh.h"
#include "net.h"
#include "wire.h"
