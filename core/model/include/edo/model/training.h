// What a recording says of the training itself (the PyTorch hooks' pytorch.* notes): the loss
// curve (Session::losses) summarised the one way `edo report`, `edo diff --plan` and the
// dashboard show it, and a table's optimizer in a few words.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "edo/model/profile.h"

namespace edo::model {

struct LossSummary {
  size_t count = 0;                          // losses recorded (steps with a loss)
  std::optional<StepLoss> first, last;       // unset when there are none
  std::optional<StepLoss> first_nonfinite;   // the first NaN or +-inf, in recorded order
  // The final loss: the mean of the last 10 % of the recorded losses (at least 1), which a
  // single noisy step does not swing. NaN when there are none or one of them is not finite.
  double final_loss = 0;
  size_t final_count = 0;                    // how many losses final_loss is the mean of
};

// The summary of losses in recorded order.
LossSummary summarize_losses(const std::vector<StepLoss>& losses);

// The session whose losses are the recording's training curve: the one with the most losses
// (the first such); nullptr when no session has any.
const Session* loss_session(const Profile& p);

// Seconds per step of the recording: the duration of the session with the most steps over its
// steps; nullopt when no session counted a step or none has a duration.
std::optional<double> seconds_per_step(const Profile& p);

// "adam lr=0.001 betas=0.9,0.999 eps=1e-08 wd=0.01": the kind and the hyperparameters it set
// (zeros left out; lr always).
std::string describe_optimizer(const OptimizerParams& o);

}  // namespace edo::model
