// Writing report.html for a set of run directories: each run's metrics read, its latest checkpoint
// probed, the page written atomically.
#include "recipes/ablate/report_writer.h"

#include <optional>

#include "framework/io/checkpoint.h"
#include "framework/io/run_files.h"
#include "recipes/ablate/run_probe.h"
#include "recipes/ablate/run_summary.h"
#include "recipes/common/checkpoint_model.h"

namespace gattn::recipes {

std::uintmax_t write_report(const ReportRequest& request) {
  check_output_file(request.output, "report: output");  // before the runs are read and probed
  std::vector<ReportRun> runs;
  for (const std::string& dir : request.run_dirs)
    runs.push_back(ReportRun{read_run(dir), RunProbe{}, RunPositionLoss{}});
  for (ReportRun& run : runs) {
    // One load per run serves both looks; eval.max_windows bounds the position-loss windows.
    std::optional<CheckpointModel> ckpt;
    try {
      ckpt.emplace(
          load_checkpoint_model(run.record.dir, {"eval.max_windows=" + std::to_string(request.windows)}, "report"));
    } catch (const std::exception& e) {
      run.probe.note = run.by_position.note = e.what();  // no checkpoint: the report shows why
      continue;
    }
    run.probe = probe_run(*ckpt, request.windows, request.sample_tokens);
    run.by_position = run_position_loss(*ckpt, request.context);  // last: it may rebuild the model
  }
  const std::string html = report_html(runs, request.options);
  write_file_atomically(request.output, html);
  return html.size();
}

}  // namespace gattn::recipes
