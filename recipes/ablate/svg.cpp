// Inline SVG charts: axes with round ticks, lines, histograms, bars and heatmaps.
#include "recipes/ablate/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace gattn::report {

namespace {

constexpr int kLeft = 58, kTop = 28, kBottom = 42, kLegend = 150;

std::string num(double v) {  // coordinates: one decimal is plenty
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
  // A range with room: equal ends are widened, a few percent added on both sides.
  Range padded() const {
    Range r = *this;
    if (r.empty()) return Range{0, 1};
    if (r.hi == r.lo) {
      const double w = r.lo == 0 ? 1.0 : std::abs(r.lo) * 0.1;
      r.lo -= w;
      r.hi += w;
    }
    const double pad = (r.hi - r.lo) * 0.04;
    return Range{r.lo - pad, r.hi + pad};
  }
};

// The plot area and the mapping of data to pixels.
struct Frame {
  double x0, x1, y0, y1;  // pixel box
  Range xr, yr;
  double px(double x) const { return x0 + (x - xr.lo) / (xr.hi - xr.lo) * (x1 - x0); }
  double py(double y) const { return y1 - (y - yr.lo) / (yr.hi - yr.lo) * (y1 - y0); }
};

// `attributes` (" name=\"value\"…") go into the svg element.
std::string open_svg(const std::string& kind, const ChartOptions& o, const std::string& attributes = "") {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart ";
  s += kind;
  s += "\" data-chart=\"" + kind + "\"" + attributes + " id=\"" + escape_xml(o.id) + "\" width=\"" +
       std::to_string(o.width) + "\" height=\"" + std::to_string(o.height) + "\" viewBox=\"0 0 " +
       std::to_string(o.width) + " " + std::to_string(o.height) + "\" font-family=\"sans-serif\" font-size=\"11\">";
  s += std::string("<title>").append(escape_xml(o.title)) + "</title>";
  s += std::string("<text x=\"").append(std::to_string(o.width / 2)) +
       "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">" + escape_xml(o.title) + "</text>";
  return s;
}

// Significant digits that tell neighbouring ticks apart: 4, or more on a narrow range far from 0
// (α moving 1e-5 around 0.5 would otherwise label every tick "0.5").
int tick_digits(const std::vector<double>& ticks) {
  if (ticks.size() < 2) return 4;
  const double step = ticks[1] - ticks[0];
  const double top = std::max(std::abs(ticks.front()), std::abs(ticks.back()));
  if (!(step > 0) || !(top > 0)) return 4;
  return std::clamp(static_cast<int>(std::ceil(std::log10(top / step))) + 1, 4, 10);
}

// Grid lines, tick labels and axis labels of a frame.
std::string axes(const Frame& f, const ChartOptions& o, bool x_ticks = true) {
  std::string s;
  const std::vector<double> y_ticks = nice_ticks(f.yr.lo, f.yr.hi);
  const int digits = tick_digits(y_ticks);
  for (double t : y_ticks) {
    const double y = f.py(t);
    s += std::string("<line x1=\"").append(num(f.x0)) + "\" x2=\"" + num(f.x1) + "\" y1=\"" + num(y) + "\" y2=\"" +
         num(y) + "\" stroke=\"#e3e3e3\"/>";
    s += std::string("<text x=\"").append(num(f.x0 - 4)) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         format_number(t, digits) + "</text>";
  }
  if (x_ticks)
    for (double t : nice_ticks(f.xr.lo, f.xr.hi)) {
      const double x = f.px(t);
      s += std::string("<line x1=\"").append(num(x)) + "\" x2=\"" + num(x) + "\" y1=\"" + num(f.y1) + "\" y2=\"" +
           num(f.y1 + 4) + "\" stroke=\"#888\"/>";
      s += std::string("<text x=\"").append(num(x)) + "\" y=\"" + num(f.y1 + 16) + "\" text-anchor=\"middle\">" +
           format_number(t) + "</text>";
    }
  s += std::string("<rect x=\"").append(num(f.x0)) + "\" y=\"" + num(f.y0) + "\" width=\"" + num(f.x1 - f.x0) +
       "\" height=\"" + num(f.y1 - f.y0) + "\" fill=\"none\" stroke=\"#888\"/>";
  s += std::string("<text x=\"").append(num((f.x0 + f.x1) / 2)) + "\" y=\"" + num(f.y1 + 34) +
       "\" text-anchor=\"middle\">" + escape_xml(o.x_label) + "</text>";
  s += std::string("<text transform=\"translate(13 ").append(num((f.y0 + f.y1) / 2)) +
       ") rotate(-90)\" text-anchor=\"middle\">" + escape_xml(o.y_label) + "</text>";
  return s;
}

std::string matrix_attributes(std::int64_t rows, std::int64_t cols) {
  return std::string(" data-rows=\"").append(std::to_string(rows)) + "\" data-cols=\"" + std::to_string(cols) + "\"";
}

// Characters (UTF-8 code points) in `text`.
std::size_t text_width(std::string_view text) {
  std::size_t n = 0;
  for (char c : text)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

// `text` cut to `max_chars` code points, the last one an ellipsis when cut.
std::string short_label(std::string_view text, std::size_t max_chars) {
  if (text_width(text) <= max_chars) return std::string(text);
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && ++n == max_chars) break;
    out += text[i];
  }
  return out + "…";
}

// The map's frame and its non-zero cells, one unit each (the caller scales them by `cell` px); with
// labels, each cell has a tooltip.
std::string cells(const std::vector<double>& values, std::int64_t rows, std::int64_t cols, double cell,
                  const HeatmapLabels* labels) {
  std::string s = std::string("<rect x=\"0\" y=\"0\" width=\"").append(std::to_string(cols)) + "\" height=\"" +
                  std::to_string(rows) + "\" fill=\"#ffffff\" stroke=\"#888\" stroke-width=\"" +
                  format_number(1.0 / cell, 3) + "\"/>";
  auto name = [](const std::string& axis, const std::vector<std::string>& l, std::int64_t i) {
    std::string t = axis.empty() ? std::to_string(i) : axis + " " + std::to_string(i);
    if (static_cast<std::size_t>(i) < l.size()) t += " ‘" + l[static_cast<std::size_t>(i)] + "’";
    return t;
  };
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double v = values[static_cast<std::size_t>(i * cols + j)];
      if (!(v > 0)) continue;
      s += std::string("<rect x=\"").append(std::to_string(j)) + "\" y=\"" + std::to_string(i) +
           "\" width=\"1\" height=\"1\" fill=\"" + ramp_color(std::sqrt(std::min(v, 1.0))) + "\"";
      if (!labels) {
        s += "/>";
        continue;
      }
      s += "><title>" + escape_xml(name(labels->row_name, labels->rows, i)) + " → " +
           escape_xml(name(labels->col_name, labels->cols, j)) + ": " + format_number(v, 3) + "</title></rect>";
    }
  return s;
}

}  // namespace

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double v, int significant) {
  if (!std::isfinite(v)) return "n/a";
  if (v == 0) return "0";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", significant, v);
  return buf;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi <= lo || target < 1) return {};
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

std::string series_color(std::size_t i) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return palette[i % 10];
}

std::string ramp_color(double v) {
  if (!std::isfinite(v)) return "#cccccc";
  v = std::clamp(v, 0.0, 1.0);
  // #f7fbff → #08306b
  const int r = static_cast<int>(std::lround(0xf7 + (0x08 - 0xf7) * v));
  const int g = static_cast<int>(std::lround(0xfb + (0x30 - 0xfb) * v));
  const int b = static_cast<int>(std::lround(0xff + (0x6b - 0xff) * v));
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", r, g, b);
  return buf;
}

bool ramp_is_dark(double v) { return std::isfinite(v) && v > 0.55; }

std::string line_chart(const std::vector<Series>& series, const ChartOptions& o) {
  Range xr, yr;
  for (const Series& s : series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.y[i])) {
        xr.add(s.x[i]);
        yr.add(s.y[i]);
      }
  Frame f{kLeft,       static_cast<double>(o.width - kLegend),
          kTop,        static_cast<double>(o.height - kBottom),
          xr.padded(), yr.padded()};
  std::string s = open_svg("line", o) + axes(f, o);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& se = series[k];
    std::string points;
    auto flush = [&] {
      if (!points.empty())
        s += std::string("<polyline fill=\"none\" stroke-width=\"1.6\" stroke=\"").append(series_color(k)) +
             "\" points=\"" + points + "\"/>";
      points.clear();
    };
    std::size_t n = 0;
    for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i) {
      if (!std::isfinite(se.y[i]) || !std::isfinite(se.x[i])) {
        flush();
        continue;
      }
      points += num(f.px(se.x[i])) + "," + num(f.py(se.y[i])) + " ";
      ++n;
    }
    flush();
    // Sparse series (val evals, a short run) get a dot per point, so a single point shows too.
    if (n <= 40)
      for (std::size_t i = 0; i < se.x.size() && i < se.y.size(); ++i)
        if (std::isfinite(se.y[i]) && std::isfinite(se.x[i]))
          s += std::string("<circle r=\"2.5\" cx=\"").append(num(f.px(se.x[i]))) + "\" cy=\"" + num(f.py(se.y[i])) +
               "\" fill=\"" + series_color(k) + "\"/>";
    const double ly = kTop + 6 + 15.0 * static_cast<double>(k);
    if (ly > o.height - 10) continue;  // more series than the legend holds
    s += std::string("<rect x=\"").append(num(o.width - kLegend + 8)) + "\" y=\"" + num(ly - 8) +
         "\" width=\"12\" height=\"3\" fill=\"" + series_color(k) + "\"/>";
    s += std::string("<text x=\"").append(num(o.width - kLegend + 24)) + "\" y=\"" + num(ly - 3) + "\">" +
         escape_xml(se.label) + "</text>";
  }
  return s + "</svg>";
}

std::string histogram_chart(const std::vector<double>& values, double lo, double hi, int bins, const ChartOptions& o) {
  std::vector<double> frac(static_cast<std::size_t>(std::max(bins, 1)), 0.0);
  std::size_t n = 0;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    const double t = (v - lo) / (hi - lo) * static_cast<double>(frac.size());
    const auto b = static_cast<std::size_t>(std::clamp(t, 0.0, static_cast<double>(frac.size()) - 1));
    frac[b] += 1;
    ++n;
  }
  double top = 0;
  for (double& c : frac) top = std::max(top, c /= std::max<double>(static_cast<double>(n), 1.0));
  Frame f{kLeft,         static_cast<double>(o.width - 12),   kTop, static_cast<double>(o.height - kBottom),
          Range{lo, hi}, Range{0, top > 0 ? top * 1.08 : 1.0}};
  std::string s = open_svg("histogram", o) + axes(f, o);
  const double w = (f.x1 - f.x0) / static_cast<double>(frac.size());
  for (std::size_t b = 0; b < frac.size(); ++b) {
    if (frac[b] <= 0) continue;
    const double y = f.py(frac[b]);
    s += std::string("<rect class=\"bin\" x=\"").append(num(f.x0 + w * static_cast<double>(b))) + "\" y=\"" + num(y) +
         "\" width=\"" + num(std::max(w - 1, 0.5)) + "\" height=\"" + num(f.y1 - y) + "\" fill=\"#4878b0\"/>";
  }
  return s + "</svg>";
}

std::string bar_chart(const std::vector<std::string>& labels, const std::vector<double>& values,
                      const ChartOptions& o) {
  Range yr;
  yr.add(0);
  for (double v : values) yr.add(v);
  if (!yr.empty() && yr.hi > 0) yr.hi *= 1.1;
  Frame f{kLeft,
          static_cast<double>(o.width - 12),
          kTop,
          static_cast<double>(o.height - kBottom - 40),
          Range{0, static_cast<double>(std::max<std::size_t>(labels.size(), 1))},
          yr.padded()};
  f.yr.lo = std::min(0.0, yr.lo);
  std::string s = open_svg("bars", o) + axes(f, o, false);
  const double w = (f.x1 - f.x0) / static_cast<double>(std::max<std::size_t>(labels.size(), 1));
  for (std::size_t i = 0; i < labels.size() && i < values.size(); ++i) {
    const double x = f.x0 + w * static_cast<double>(i);
    const double cx = x + w / 2;
    s += std::string("<text transform=\"translate(").append(num(cx)) + " " + num(f.y1 + 10) + ") rotate(30)\">" +
         escape_xml(labels[i]) + "</text>";
    if (!std::isfinite(values[i])) continue;
    const double y = f.py(values[i]), y0 = f.py(0);
    s += std::string("<rect class=\"bar\" x=\"").append(num(x + w * 0.15)) + "\" y=\"" + num(std::min(y, y0)) +
         "\" width=\"" + num(w * 0.7) + "\" height=\"" + num(std::abs(y0 - y)) + "\" fill=\"" + series_color(i) +
         "\"/>";
    s += std::string("<text x=\"").append(num(cx)) + "\" y=\"" + num(std::min(y, y0) - 3) +
         "\" text-anchor=\"middle\" font-size=\"10\">" + format_number(values[i], 3) + "</text>";
  }
  return s + "</svg>";
}

std::string heatmap(const std::vector<double>& values, std::int64_t rows, std::int64_t cols, const ChartOptions& o) {
  // The matrix in its own coordinates (one unit per cell), scaled into the box under the title.
  const double box = std::min(o.width - 8, o.height - kTop - 4);
  const double cell = box / static_cast<double>(std::max<std::int64_t>(std::max(rows, cols), 1));
  std::string s = open_svg("heatmap", o, matrix_attributes(rows, cols));
  s += std::string("<g transform=\"translate(4 ").append(num(kTop)) + ") scale(" + num(cell) +
       ")\" shape-rendering=\"crispEdges\">";
  s += cells(values, rows, cols, cell, nullptr);
  return s + "</g></svg>";
}

std::string heatmap(const std::vector<double>& values, std::int64_t rows, std::int64_t cols, const ChartOptions& o,
                    const HeatmapLabels& labels) {
  constexpr double kMaxCell = 26, kFont = 10, kCharWidth = 6.2;
  constexpr std::size_t kMaxChars = 8;
  std::size_t row_chars = 0, col_chars = 0;
  for (const std::string& l : labels.rows) row_chars = std::max(row_chars, text_width(short_label(l, kMaxChars)));
  for (const std::string& l : labels.cols) col_chars = std::max(col_chars, text_width(short_label(l, kMaxChars)));
  // Left: the row axis's name, then the row labels; top: the title, then the column labels (read
  // upwards); bottom: the column axis's name.
  const double left = (labels.row_name.empty() ? 4 : 18) + (row_chars ? kCharWidth * row_chars + 4 : 0);
  const double top = kTop + (col_chars ? kCharWidth * col_chars + 4 : 0);
  const double bottom = labels.col_name.empty() ? 6 : 20;
  const double cell =
      std::clamp(std::min((o.width - left - 8) / static_cast<double>(std::max<std::int64_t>(cols, 1)),
                          (o.height - top - bottom) / static_cast<double>(std::max<std::int64_t>(rows, 1))),
                 0.5, kMaxCell);
  const double map_w = cell * static_cast<double>(cols), map_h = cell * static_cast<double>(rows);
  ChartOptions fitted = o;
  fitted.width =
      static_cast<int>(std::ceil(std::max(left + map_w + 8, 7.0 * static_cast<double>(text_width(o.title)) + 16)));
  fitted.height = static_cast<int>(std::ceil(top + map_h + bottom));
  std::string s = open_svg("heatmap", fitted, matrix_attributes(rows, cols));
  // Every label where a cell holds one; else every k-th, so neighbours do not overlap.
  const std::int64_t every = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(8.0 / cell)));
  const double font = std::clamp(cell * 0.8, 7.0, kFont);
  s += "<g class=\"labels\" font-family=\"monospace\" font-size=\"" + num(font) + "\" fill=\"#444\">";
  for (std::size_t i = 0; i < labels.rows.size() && static_cast<std::int64_t>(i) < rows; ++i) {
    if (static_cast<std::int64_t>(i) % every) continue;
    s += std::string("<text class=\"row-label\" x=\"").append(num(left - 3)) + "\" y=\"" +
         num(top + cell * (static_cast<double>(i) + 0.5) + font * 0.35) + "\" text-anchor=\"end\">" +
         escape_xml(short_label(labels.rows[i], kMaxChars)) + "</text>";
  }
  for (std::size_t j = 0; j < labels.cols.size() && static_cast<std::int64_t>(j) < cols; ++j) {
    if (static_cast<std::int64_t>(j) % every) continue;
    s += std::string("<text class=\"col-label\" transform=\"translate(")
             .append(num(left + cell * (static_cast<double>(j) + 0.5) + font * 0.35)) +
         " " + num(top - 3) + ") rotate(-90)\">" + escape_xml(short_label(labels.cols[j], kMaxChars)) + "</text>";
  }
  s += "</g>";
  if (!labels.col_name.empty())
    s += std::string("<text x=\"").append(num(left + map_w / 2)) + "\" y=\"" + num(top + map_h + 14) +
         "\" text-anchor=\"middle\">" + escape_xml(labels.col_name) + "</text>";
  if (!labels.row_name.empty())
    s += std::string("<text transform=\"translate(12 ").append(num(top + map_h / 2)) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape_xml(labels.row_name) + "</text>";
  s += std::string("<g transform=\"translate(").append(num(left)) + " " + num(top) + ") scale(" + num(cell) +
       ")\" shape-rendering=\"crispEdges\">";
  s += cells(values, rows, cols, cell, &labels);
  return s + "</g></svg>";
}

std::string flow_chart(const std::vector<FlowBox>& boxes, const ChartOptions& o) {
  constexpr double kSkip = 16, kBoxLeft = 36, kRight = 8, kGap = 16, kFirst = 28, kCharWidth = 6.4;
  constexpr double kPlain = 24, kTwoLines = 38;
  const double box_w = o.width - kBoxLeft - kRight, cx = kBoxLeft + box_w / 2;
  std::vector<double> top, height;
  double y = kFirst;
  for (const FlowBox& b : boxes) {
    top.push_back(y);
    height.push_back(b.detail.empty() ? kPlain : kTwoLines);
    y += height.back() + kGap;
  }
  ChartOptions fitted = o;
  fitted.height = static_cast<int>(std::ceil(y - kGap + 8));
  std::string s = open_svg("diagram", fitted);
  auto arrow_head = [&](double x, double y_tip, bool rightwards) {
    const std::string pts = rightwards ? num(x) + "," + num(y_tip) + " " + num(x - 6) + "," + num(y_tip - 4) + " " +
                                             num(x - 6) + "," + num(y_tip + 4)
                                       : num(x) + "," + num(y_tip) + " " + num(x - 4) + "," + num(y_tip - 6) + " " +
                                             num(x + 4) + "," + num(y_tip - 6);
    return std::string("<polygon points=\"").append(pts) + "\" fill=\"#666\"/>";
  };
  if (boxes.size() >= 2) {  // the skip connection, left of the boxes
    const double y0 = top.front() + height.front() / 2, y1 = top.back() + height.back() / 2;
    s += std::string("<polyline class=\"skip\" fill=\"none\" stroke=\"#666\" stroke-width=\"1.2\" points=\"")
             .append(num(kBoxLeft)) +
         "," + num(y0) + " " + num(kSkip) + "," + num(y0) + " " + num(kSkip) + "," + num(y1) + " " + num(kBoxLeft - 6) +
         "," + num(y1) + "\"/>" + arrow_head(kBoxLeft, y1, true);
    s += std::string("<text transform=\"translate(").append(num(kSkip - 4)) + " " + num((y0 + y1) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"10\" fill=\"#666\">residual</text>";
  }
  const auto max_chars = static_cast<std::size_t>(std::max(8.0, (box_w - 28) / kCharWidth));
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const FlowBox& b = boxes[i];
    const double t = top[i], h = height[i];
    if (i > 0) {
      const double from = top[i - 1] + height[i - 1];
      s += std::string("<line x1=\"").append(num(cx)) + "\" x2=\"" + num(cx) + "\" y1=\"" + num(from) + "\" y2=\"" +
           num(t - 5) + "\" stroke=\"#666\" stroke-width=\"1.2\"/>" + arrow_head(cx, t, false);
    }
    const bool accent = !b.color.empty();
    s += std::string("<g class=\"box\"").append(b.attributes) + ">";
    if (!b.tooltip.empty()) s += "<title>" + escape_xml(b.tooltip) + "</title>";
    s += std::string("<rect x=\"").append(num(kBoxLeft)) + "\" y=\"" + num(t) + "\" width=\"" + num(box_w) +
         "\" height=\"" + num(h) + "\" rx=\"4\" fill=\"" + (accent ? b.color : "#f3f3f3") + "\" fill-opacity=\"" +
         (accent ? "0.14" : "1") + "\" stroke=\"" + (accent ? b.color : "#999") + "\" stroke-width=\"" +
         (accent ? "1.6" : "1") + "\"/>";
    const double text_x = kBoxLeft + (accent ? 18 : 8);
    if (accent)  // a solid swatch, so the box's colour reads at a glance
      s += std::string("<rect class=\"swatch\" x=\"").append(num(kBoxLeft)) + "\" y=\"" + num(t) +
           "\" width=\"10\" height=\"" + num(h) + "\" rx=\"2\" fill=\"" + b.color + "\"/>";
    s += std::string("<text x=\"").append(num(text_x)) + "\" y=\"" + num(t + 16) + "\" font-size=\"12\"" +
         (accent ? " font-weight=\"bold\"" : "") + ">" + escape_xml(short_label(b.title, max_chars)) + "</text>";
    if (!b.tag.empty())
      s += std::string("<text x=\"").append(num(kBoxLeft + box_w - 8)) + "\" y=\"" + num(t + 16) +
           "\" text-anchor=\"end\" fill=\"#555\">" + escape_xml(b.tag) + "</text>";
    if (!b.detail.empty())
      s += std::string("<text class=\"detail\" x=\"").append(num(text_x)) + "\" y=\"" + num(t + 31) +
           "\" fill=\"#444\">" + escape_xml(short_label(b.detail, max_chars)) + "</text>";
    s += "</g>";
  }
  return s + "</svg>";
}

}  // namespace gattn::report
