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

std::string open_svg(const std::string& kind, const ChartOptions& o) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart ";
  s += kind;
  s += "\" data-chart=\"" + kind + "\" id=\"" + escape_xml(o.id) + "\" width=\"" + std::to_string(o.width) +
       "\" height=\"" + std::to_string(o.height) + "\" viewBox=\"0 0 " + std::to_string(o.width) + " " +
       std::to_string(o.height) + "\" font-family=\"sans-serif\" font-size=\"11\">";
  s += std::string("<title>").append(escape_xml(o.title)) + "</title>";
  s += std::string("<text x=\"").append(std::to_string(o.width / 2)) +
       "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">" + escape_xml(o.title) + "</text>";
  return s;
}

// Grid lines, tick labels and axis labels of a frame.
std::string axes(const Frame& f, const ChartOptions& o, bool x_ticks = true) {
  std::string s;
  for (double t : nice_ticks(f.yr.lo, f.yr.hi)) {
    const double y = f.py(t);
    s += std::string("<line x1=\"").append(num(f.x0)) + "\" x2=\"" + num(f.x1) + "\" y1=\"" + num(y) + "\" y2=\"" +
         num(y) + "\" stroke=\"#e3e3e3\"/>";
    s += std::string("<text x=\"").append(num(f.x0 - 4)) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         format_number(t) + "</text>";
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
  std::string s = open_svg("heatmap", o);
  s += std::string("<g transform=\"translate(4 ").append(num(kTop)) + ") scale(" + num(cell) +
       ")\" shape-rendering=\"crispEdges\">";
  s += std::string("<rect x=\"0\" y=\"0\" width=\"").append(std::to_string(cols)) + "\" height=\"" +
       std::to_string(rows) + "\" fill=\"#ffffff\" stroke=\"#888\" stroke-width=\"" + num(1.0 / cell) + "\"/>";
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) {
      const double v = values[static_cast<std::size_t>(i * cols + j)];
      if (!(v > 0)) continue;
      s += std::string("<rect x=\"").append(std::to_string(j)) + "\" y=\"" + std::to_string(i) +
           "\" width=\"1\" height=\"1\" fill=\"" + ramp_color(std::sqrt(std::min(v, 1.0))) + "\"/>";
    }
  return s + "</g></svg>";
}

}  // namespace gattn::report
