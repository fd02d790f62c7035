// How a round's table travels: down a binomial tree over the places of the
// table (rank order; the leader at place 0), not from the leader to every
// member. The leader answers each Join with the incarnation only and sends
// the table to its children; each member sends it on to its own. Place p's
// parent is p with its highest bit cleared, its children p + 2^k for every
// 2^k > p below n: the leader sends ⌈log2 n⌉ tables, a member at most that
// many, and the table reaches everyone in ⌈log2 n⌉ hops. Only for groups of
// kTreeFromMembers or more. Pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bootstrap/join_checks.h"
#include "bootstrap/table.h"

namespace ringmaster::internal {

// Place p's parent (-1 for the root, place 0).
inline int TreeParent(int place) {
  if (place <= 0) return -1;
  int high = 1;
  while (high * 2 <= place) high *= 2;
  return place - high;
}

// How many hops the table takes from the leader to place p (its set bits).
inline int TreeHops(int place) {
  int hops = 0;
  for (; place > 0; place &= place - 1) ++hops;
  return hops;
}

// Place p's children in a tree of n places, nearest first.
inline std::vector<int> TreeChildren(int place, int n) {
  std::vector<int> out;
  int step = 1;
  while (step <= place) step *= 2;
  for (; place + step < n; step *= 2) out.push_back(place + step);
  return out;
}

// The smallest group whose table travels down the tree. A smaller one gets
// the whole table in every Join answer: the leader's N - 1 tables of N
// entries stay small, and no member waits on another for it.
inline constexpr size_t kTreeFromMembers = 64;

// A member whose Join was answered `forwarded` and whose table has not come
// after this long for each hop it takes (TreeHops) asks the leader for it
// (FetchTable), and again this long after each answer that did not give it.
// Its parent may have died after its Join: the member then sends the table
// on to its own children itself. Each hop of a healthy tree takes
// milliseconds; the wait grows with the hops so that in a stranded subtree
// its topmost member asks first and serves the rest.
inline constexpr double kFetchTableAfterSeconds = 3;

// Whether `table` travels down the tree: at least kTreeFromMembers members,
// and every member but the leader can be sent it (a control port).
// Otherwise the leader answers every Join with the whole table, as it must
// a member that cannot (a test's bare client).
inline bool TableTravelsDownTree(const Table& table) {
  if (table.members.size() < kTreeFromMembers) return false;
  for (size_t i = 1; i < table.members.size(); ++i) {
    if (table.members[i].control_port <= 0) return false;
  }
  return true;
}

// Where `rank` sits in `table` (-1: not in it).
inline int PlaceOf(const Table& table, int rank) {
  for (size_t i = 0; i < table.members.size(); ++i) {
    if (table.members[i].rank == rank) return static_cast<int>(i);
  }
  return -1;
}

// What the leader answers the Join of `claim` once its round formed `table`
// (the gRPC service and the in-process bootstrap alike): the incarnation and
// who sends the table, or (the table does not travel down the tree) the
// table itself; with the leader's proof over the member's nonces, the
// incarnation and what the answer lists (`key` empty: none).
struct JoinAnswer {
  Table table;             // no members when forwarded
  bool forwarded = false;  // the table comes from `parent` (a rank)
  int parent = 0;
  int hops = 0;  // forwarded: TreeHops of the member's place
  std::string proof;
};
inline JoinAnswer AnswerJoin(const JobKey& key, const JoinClaim& claim, const Table& table) {
  JoinAnswer a;
  if (const int place = PlaceOf(table, claim.rank); place > 0 && TableTravelsDownTree(table)) {
    a.table.incarnation = table.incarnation;
    a.forwarded = true;
    a.parent = table.members[TreeParent(place)].rank;
    a.hops = TreeHops(place);
  } else {
    a.table = table;
  }
  if (!key.empty()) {
    Mac m = TableProof(key, claim, a.table);
    a.proof.assign(m.data(), m.size());
  }
  return a;
}

}  // namespace ringmaster::internal
