// Writing report.html for a set of run directories: each run's metrics read, its latest checkpoint
// probed, the page written atomically.
#include "recipes/ablate/report_writer.h"

#include "framework/io/checkpoint.h"
#include "framework/io/run_files.h"
#include "recipes/ablate/run_probe.h"
#include "recipes/ablate/run_summary.h"

namespace gattn::recipes {

std::uintmax_t write_report(const ReportRequest& request) {
  check_output_file(request.output, "report: output");  // before the runs are read and probed
  std::vector<ReportRun> runs;
  for (const std::string& dir : request.run_dirs)
    runs.push_back(ReportRun{read_run(dir), RunProbe{}, RunPositionLoss{}});
  for (ReportRun& run : runs) {
    run.probe = probe_run(run.record.dir, request.windows, request.sample_tokens);
    run.by_position = run_position_loss(run.record.dir, request.context, request.windows);
  }
  const std::string html = report_html(runs, request.options);
  write_file_atomically(request.output, html);
  return html.size();
}

}  // namespace gattn::recipes
