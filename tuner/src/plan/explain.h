// The words of a plan (private to tuner/): what a candidate is, and why the plan took it.
#pragma once

#include <unordered_map>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "edo/model/tune.h"

namespace edo::tuner {

// printf of one number ("%.3g" ...).
std::string number(double x, const char* fmt);

// What the candidate is, in words ("offload to host with a device cache of 895 rows ..."); the
// reasons it names are marked in `reasons` (offsets in the returned text).
std::string describe(const model::TuneCandidate& c, uint64_t rows, std::vector<model::TuneReason>& reasons);

// ", hit rate 82% held out (...) (99% recorded)" for an offload candidate, "" otherwise; an
// estimate says why it is one ("(estimated: recording has no ordered sample)"); `modelled`: the
// plan's times are a device model's, so a rate that is not held out is the one the model used.
std::string hit_rate_words(const model::TuneCandidate& c, bool modelled);

// A candidate's loss in the plan's integer units (optimizer.h loss_units): its error,
// kRetrainingLoss when it needs retraining, and one unit for any change from the baseline, so
// that of two options that lose nothing and take the same time the table as recorded is kept.
int64_t candidate_loss(const model::TuneCandidate& c, bool baseline);

// An error this small is negligible (issue 34 point 3): fp16's rounding of a table (about
// 0.0002) is, bf16's (about 0.0015) and int8's are not. An offload that slows the step is
// charged this much loss in the plan when the table has a format of smaller error that is no
// slower (plan.cpp charge_slow_offloads): it loses no accuracy but changes the step time, and
// a negligible error at no cost in time is the smaller change.
inline constexpr double kNegligibleError = 1e-3;

// The plan's extra loss per candidate index (charged slow offloads); absent: none.
using ExtraLoss = std::unordered_map<size_t, int64_t>;

// Why the plan took candidate `ci` for table `t` (`base`: the table's baseline candidate):
// what it saves and costs against the baseline, its error against the limit, and what kept
// the others out (under the speed objective: faster ones need more memory; under the
// least-change objective: ones with less loss need more memory). `of_table`: the indices of
// the table's candidates in r.candidates (the others of one table, without a scan of every
// table's: 10,000 tables have 175,000 candidates). The reasons it names are marked in `reasons`.
std::string why_of(const model::TuneResult& r, size_t ci, const model::TuneCandidate* base, const model::TuneTable& t,
                   double max_error, const std::vector<size_t>& of_table, const ExtraLoss& extra,
                   std::vector<model::TuneReason>& reasons);

}  // namespace edo::tuner
