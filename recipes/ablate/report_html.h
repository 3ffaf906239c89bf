// The page `gattn report` writes: one self-contained HTML file (inline SVG and CSS, no scripts, no
// network) with the runs' summary table, a diagram of each run's attention block with its gates
// where they act (recipes/ablate/gate_diagram.h), loss curves, attention entropy and sink ratio, gate means
// per layer over training (and the final gate mean per head where the gates report per head), the
// gates' logged scalar parameters per layer over training (a pair gate's α),
// gate-value histograms per layer, and for one sample text the tokens
// coloured by their gate value per layer and the attention maps of chosen heads. Encoder–decoder
// runs add the sample's source and a cross-attention section: per decoder block the map of target
// positions (rows) over source positions (columns), averaged over heads and for the chosen heads,
// and the encoder's self-attention, all with token-labelled axes; their cross and encoder gate
// values get histograms of their own. The loss by position (log-spaced buckets of the val windows at
// one context, the report's --context) shows how each run uses its context and how it extrapolates.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "recipes/ablate/run_position_loss.h"
#include "recipes/ablate/run_probe.h"
#include "recipes/ablate/run_summary.h"

namespace gattn::recipes {

struct ReportRun {
  RunRecord record;
  RunProbe probe;
  RunPositionLoss by_position;  // the loss by position at the report's context
};

struct HeadChoice {
  int layer = 0, head = 0;  // layer −1 stands for the last layer
};

struct ReportOptions {
  std::string title = "gattn report";
  std::vector<HeadChoice> heads;  // attention maps to draw for each run's sample text (self and cross)
};

// "0:0,-1:1" → {(0,0), (−1,1)}; throws UsageError naming the bad item.
std::vector<HeadChoice> parse_heads(const std::string& text);

std::string report_html(const std::vector<ReportRun>& runs, const ReportOptions& options);

}  // namespace gattn::recipes
