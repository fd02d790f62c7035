// Whether the members agree on a process set (AddProcessSet, collective over
// the whole group): each checks its own arguments and offers a fixed record
// of them, and every member decides from the same gathered records, so all
// reach the same verdict, naming who differs. Pure, as DecideResume is: the
// engine gathers (CommunicatorImpl::AddProcessSet), this decides.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "ringmaster/status.h"

namespace ringmaster::internal {

// A member's offer: (valid, id, the number of ranks, a hash of the ranks).
inline constexpr int kProcessSetWords = 4;
using ProcessSetOffer = std::array<int64_t, kProcessSetWords>;

// Sets a group may add in one formation: the set's key on the wire
// (its number within the formation) has 23 bits.
inline constexpr int kMaxProcessSets = (1 << 23) - 1;

// This member's verdict on its own arguments: `sorted` (its ranks, sorted)
// for a group of `size` that has added `added` sets in this formation.
Status CheckProcessSet(int id, std::span<const int> sorted, int size, int added);

// What it offers the others; `valid`: its own verdict was OK.
ProcessSetOffer OfferProcessSet(bool valid, int id, std::span<const int> sorted);

// `offers`: every member's (kProcessSetWords each, rank order), ours at
// `rank`. OK when every member offered a valid set equal to ours, else
// FailedPrecondition naming the members whose ranks were invalid, or those
// who offered another set.
Status DecideProcessSet(int id, std::span<const int64_t> offers, int rank,
                        std::span<const std::string> names);

}  // namespace ringmaster::internal
