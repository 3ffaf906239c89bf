// Inline SVG charts for `gattn report`: self-contained markup (no scripts, no external resources)
// that any browser renders. Every chart is one <svg class="chart KIND" data-chart="KIND" id=…>,
// so tests and readers can find them; values that are not finite are left out (gaps in lines).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gattn::report {

// Text safe inside XML/HTML elements and attribute values.
std::string escape_xml(std::string_view text);
// Compact number for axes and tables: 4 significant digits, no trailing zeros ("0.25", "1.2e+04").
std::string format_number(double v, int significant = 4);
// Round tick positions covering [lo, hi] (about `target` of them, steps 1, 2 or 5 × 10^k).
std::vector<double> nice_ticks(double lo, double hi, int target = 5);
// The i-th colour of the series palette (cycles after 10).
std::string series_color(std::size_t i);
// A colour for v in [0, 1] on a white → dark blue ramp (clamped; not-finite gives grey).
std::string ramp_color(double v);
// Whether text on ramp_color(v) should be white.
bool ramp_is_dark(double v);

struct Series {
  std::string label;
  std::vector<double> x, y;  // same length; a non-finite y breaks the line
};

struct ChartOptions {
  std::string id;  // the svg's id (unique in the page)
  std::string title, x_label, y_label;
  int width = 560, height = 300;
};

// Lines over a shared x axis, with a legend of the series labels.
std::string line_chart(const std::vector<Series>& series, const ChartOptions& options);
// Histogram of `values` in `bins` equal bins over [lo, hi] (values outside are clamped into the end
// bins); bar heights are fractions of the values.
std::string histogram_chart(const std::vector<double>& values, double lo, double hi, int bins,
                            const ChartOptions& options);
// One bar per label.
std::string bar_chart(const std::vector<std::string>& labels, const std::vector<double>& values,
                      const ChartOptions& options);
// A rows × cols matrix (row-major) of values in [0, 1] drawn as cells coloured by √value (small
// weights stay visible); zero cells are left blank. The svg carries data-rows and data-cols.
std::string heatmap(const std::vector<double>& values, std::int64_t rows, std::int64_t cols,
                    const ChartOptions& options);

// What labels a heatmap's axes: a label per row (left of the map) and per column (above it, read
// upwards), either list empty for none, and the axes' names (under the map, left of it).
struct HeatmapLabels {
  std::vector<std::string> rows, cols;
  std::string row_name, col_name;
};
// The same map with its rows and columns labelled, square cells of at most 26 px within the
// options' box (the chart shrinks to the matrix, keeping room for its title), labels cut to 8
// characters and thinned where cells are too small to hold them, and a tooltip per cell naming its
// row, column and value.
std::string heatmap(const std::vector<double>& values, std::int64_t rows, std::int64_t cols,
                    const ChartOptions& options, const HeatmapLabels& labels);

// A box of a flow chart: a stage (no colour) or an accented step (a colour, drawn with a swatch).
struct FlowBox {
  std::string title;
  std::string detail;      // a second, smaller line (cut to the box's width; the tooltip keeps it whole)
  std::string tag;         // short text at the box's right end
  std::string tooltip;     // the box's <title>
  std::string color;       // "" for a plain stage
  std::string attributes;  // " name=\"value\"…" on the box's <g class="box">
};
// The boxes top to bottom, joined by arrows, and a skip connection from the first box around the
// others into the last (a residual). The chart is `options.width` wide and as tall as its boxes
// (options.height is not read).
std::string flow_chart(const std::vector<FlowBox>& boxes, const ChartOptions& options);

}  // namespace gattn::report
