// The HTML page of `quantkit debug runall`: one self-contained file (inline CSS and SVG charts,
// no script, no network fetch) rendered from the JSON report, so both always say the same.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli.hpp"

namespace quantkit {
namespace cli {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A JSON metric (number or "inf"/"-inf"/"nan") as a double.
double num(const Json& v) {
  if (v.is_number()) return v.get<double>();
  const std::string s = v.get<std::string>();
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  return NAN;
}

std::string cell(const std::string& metric, const Json& v) {
  const double d = num(v);
  if (metric == "cosine" && std::isfinite(d)) return fmt::format("{:.7f}", d);
  return format_number(d, 5);
}

const char* const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"};
const char* const metric_names[] = {"cosine", "mse", "mre", "sqnr", "chebyshev"};

std::string tick(double v) { return format_number(v, 3); }
// Axis labels with as many decimals as the span needs (cosines near 1 differ in the 4th digit).
std::string axis_tick(double v, double span) {
  const int decimals = span > 0 ? std::clamp(static_cast<int>(std::ceil(-std::log10(span / 4))) + 1, 0, 9) : 3;
  if (std::fabs(v) < 0.5 * std::pow(10.0, -decimals)) v = 0.0;  // no "-0.0"
  return fmt::format("{:.{}f}", v, decimals);
}

// Horizontal bars: one per label; `values` finite (callers clamp infinities).
std::string bar_chart(const std::vector<std::string>& labels, const std::vector<double>& values, const std::string& axis,
                      double marker = NAN, const std::string& marker_label = {}) {
  const int row = 18, left = 230, width = 460, top = 24;
  const int height = top + row * static_cast<int>(labels.size()) + 30;
  double lo = 0, hi = 0;
  for (double v : values) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (std::isfinite(marker)) hi = std::max(hi, marker), lo = std::min(lo, marker);
  if (hi == lo) hi = lo + 1;
  auto x = [&](double v) { return left + (v - lo) / (hi - lo) * width; };
  std::string s = fmt::format(R"(<svg class="chart" width="{}" height="{}" role="img" aria-label="{}">)", left + width + 40,
                              height, esc(axis));
  s += fmt::format(R"(<text x="{}" y="14" class="axis">{}</text>)", left, esc(axis));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const int y = top + row * static_cast<int>(i);
    const double x0 = x(std::min(0.0, values[i])), x1 = x(std::max(0.0, values[i]));
    std::string name = labels[i].size() > 34 ? "..." + labels[i].substr(labels[i].size() - 31) : labels[i];
    s += fmt::format(R"(<text x="{}" y="{}" class="label" text-anchor="end">{}</text>)", left - 6, y + 13, esc(name));
    s += fmt::format(R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {}</title></rect>)", x0, y + 2,
                     std::max(1.0, x1 - x0), row - 5, palette[0], esc(labels[i]), tick(values[i]));
    s += fmt::format(R"(<text x="{:.1f}" y="{}" class="value">{}</text>)", x1 + 3, y + 13, tick(values[i]));
  }
  const int axis_y = top + row * static_cast<int>(labels.size()) + 4;
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="grid"/>)", left, axis_y, left + width, axis_y);
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    s += fmt::format(R"(<text x="{:.1f}" y="{}" class="tick" text-anchor="middle">{}</text>)", x(v), axis_y + 14, axis_tick(v, hi - lo));
  }
  if (std::isfinite(marker)) {
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" class="marker"/>)", x(marker), top - 4, axis_y);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" class="marker-label">{}</text>)", x(marker) + 3, top - 6, esc(marker_label));
  }
  return s + "</svg>";
}

struct Series {
  std::string label;
  std::vector<double> y;
};

// Lines over x = 0..n-1 (x labels optional, shown rotated when few enough).
std::string line_chart(const std::vector<Series>& series, const std::vector<std::string>& xlabels, const std::string& yaxis,
                       double marker = NAN, const std::string& marker_label = {}) {
  const int left = 60, top = 20, width = 620, height = 220, bottom = 110;
  std::size_t n = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : series) {
    n = std::max(n, s.y.size());
    for (double v : s.y)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (std::isfinite(marker)) lo = std::min(lo, marker), hi = std::max(hi, marker);
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi == lo) hi = lo + 1;
  const double pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
  auto X = [&](std::size_t i) { return left + (n > 1 ? static_cast<double>(i) / (n - 1) * width : width / 2.0); };
  auto Y = [&](double v) { return top + (hi - v) / (hi - lo) * height; };
  std::string s = fmt::format(R"(<svg class="chart" width="{}" height="{}" role="img" aria-label="{}">)", left + width + 170,
                              top + height + bottom, esc(yaxis));
  s += fmt::format(R"(<text x="4" y="12" class="axis">{}</text>)", esc(yaxis));
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    s += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" class="grid"/>)", left, Y(v), left + width, Y(v));
    s += fmt::format(R"(<text x="{}" y="{:.1f}" class="tick" text-anchor="end">{}</text>)", left - 4, Y(v) + 4, axis_tick(v, hi - lo));
  }
  if (std::isfinite(marker)) {
    s += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" class="marker"/>)", left, Y(marker), left + width, Y(marker));
    s += fmt::format(R"(<text x="{}" y="{:.1f}" class="marker-label">{}</text>)", left + 4, Y(marker) - 4, esc(marker_label));
  }
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* color = palette[k % 7];
    std::string pts;
    auto flush = [&] {
      if (!pts.empty()) s += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="1.6"/>)", pts, color);
      pts.clear();
    };
    for (std::size_t i = 0; i < series[k].y.size(); ++i) {
      double v = series[k].y[i];
      if (std::isnan(v)) {  // no value here (e.g. not quantized in this variant): a gap
        flush();
        continue;
      }
      if (!std::isfinite(v)) v = v > 0 ? hi : lo;  // infinite SQNR (exact) drawn at the top
      pts += fmt::format("{:.1f},{:.1f} ", X(i), Y(v));
      s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2.5" fill="{}"><title>{} #{}: {}</title></circle>)", X(i), Y(v),
                       color, esc(series[k].label), i, tick(series[k].y[i]));
    }
    flush();
    const std::string& label = series[k].label;
    const std::string shown = label.size() > 26 ? label.substr(0, 23) + "..." : label;
    s += fmt::format(R"(<g><title>{}</title><rect x="{}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{}" class="label">{}</text></g>)",
                     esc(label), left + width + 12, top + 16 * k, color, left + width + 26, top + 16 * k + 9, esc(shown));
  }
  if (n <= 60)
    for (std::size_t i = 0; i < xlabels.size() && i < n; ++i) {
      std::string name = xlabels[i].size() > 22 ? "..." + xlabels[i].substr(xlabels[i].size() - 19) : xlabels[i];
      s += fmt::format(R"~(<text transform="translate({:.1f},{}) rotate(-55)" class="tick" text-anchor="end">{}</text>)~", X(i) + 3,
                       top + height + 10, esc(name));
    }
  return s + "</svg>";
}

// Histograms (same bins), overlaid, with vertical markers.
struct Marker {
  double x;
  std::string label;
  const char* cls;
};
std::string histogram_chart(const std::vector<std::pair<std::string, const Json*>>& hists, const std::vector<Marker>& markers,
                            const std::string& title) {
  const int left = 50, top = 22, width = 560, height = 160;
  const Json& h0 = *hists.front().second;
  const double lo = h0["lo"].get<double>(), hi = h0["hi"].get<double>();
  std::int64_t top_count = 1;
  for (const auto& h : hists)
    for (const auto& c : (*h.second)["counts"]) top_count = std::max(top_count, c.get<std::int64_t>());
  // Square-root count scale: tails (what clipping cuts) stay visible next to the peak.
  auto Y = [&](std::int64_t c) { return top + height - std::sqrt(static_cast<double>(c) / top_count) * height; };
  auto X = [&](double v) { return left + (v - lo) / (hi - lo) * width; };
  std::string s = fmt::format(R"(<svg class="chart" width="{}" height="{}" role="img" aria-label="{}">)", left + width + 190,
                              top + height + 40, esc(title));
  s += fmt::format(R"(<text x="{}" y="14" class="axis">{} (count, square-root scale)</text>)", left, esc(title));
  for (std::size_t k = 0; k < hists.size(); ++k) {
    const auto& counts = (*hists[k].second)["counts"];
    const std::size_t bins = counts.size();
    const double bw = static_cast<double>(width) / bins;
    const char* color = palette[k % 7];
    for (std::size_t i = 0; i < bins; ++i) {
      const std::int64_t c = counts[i].get<std::int64_t>();
      if (!c) continue;
      s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" fill-opacity="{}"><title>{}: {}</title></rect>)",
                       left + i * bw, Y(c), std::max(0.5, bw - 0.3), top + height - Y(c), color, hists.size() > 1 ? 0.5 : 0.85,
                       esc(hists[k].first), c);
    }
    s += fmt::format(R"(<rect x="{}" y="{}" width="10" height="10" fill="{}" fill-opacity="0.7"/><text x="{}" y="{}" class="label">{}</text>)",
                     left + width + 12, top + 16 * k, color, left + width + 26, top + 16 * k + 9, esc(hists[k].first));
  }
  s += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" class="grid"/>)", left, top + height, left + width, top + height);
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    s += fmt::format(R"(<text x="{:.1f}" y="{}" class="tick" text-anchor="middle">{}</text>)", X(v), top + height + 14, axis_tick(v, hi - lo));
  }
  std::size_t m = 0;
  for (const auto& mk : markers) {
    if (!(mk.x >= lo && mk.x <= hi)) continue;
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1}" x2="{0:.1f}" y2="{2}" class="{3}"><title>{4}</title></line>)", X(mk.x), top,
                     top + height, mk.cls, esc(mk.label));
    s += fmt::format(R"(<text x="{}" y="{}" class="label">{}</text>)", left + width + 12, top + 16 * (hists.size() + m) + 9,
                     esc((std::string(mk.cls) == "clip" ? "- - " : "... ") + mk.label));
    ++m;
  }
  return s + "</svg>";
}

// Box plots, one per channel (at most 64 shown: the widest ones by max |x| when there are more).
std::string box_chart(const Json& ch) {
  std::vector<const Json*> boxes;
  for (const auto& c : ch["channels"]) boxes.push_back(&c);
  const std::size_t total = boxes.size();
  if (boxes.size() > 64) {
    std::sort(boxes.begin(), boxes.end(), [](const Json* a, const Json* b) {
      auto r = [](const Json* j) { return std::max(std::fabs((*j)["min"].get<double>()), std::fabs((*j)["max"].get<double>())); };
      return r(a) > r(b);
    });
    boxes.resize(64);
    std::sort(boxes.begin(), boxes.end(),
              [](const Json* a, const Json* b) { return (*a)["channel"].get<int>() < (*b)["channel"].get<int>(); });
  }
  const int left = 60, top = 22, height = 200;
  const int step = std::max(8, std::min(28, 720 / std::max<int>(1, static_cast<int>(boxes.size()))));
  const int width = step * static_cast<int>(boxes.size());
  double lo = INFINITY, hi = -INFINITY;
  for (const Json* b : boxes) lo = std::min(lo, (*b)["min"].get<double>()), hi = std::max(hi, (*b)["max"].get<double>());
  if (hi == lo) hi = lo + 1;
  auto Y = [&](double v) { return top + (hi - v) / (hi - lo) * height; };
  const std::string title = fmt::format("{} '{}', channel axis {}{}", ch["kind"].get<std::string>(), ch["tensor"].get<std::string>(),
                                        ch["axis"].get<int>(), total > boxes.size() ? fmt::format(" (the 64 widest of {} channels)", total) : "");
  std::string s = fmt::format(R"(<svg class="chart" width="{}" height="{}" role="img" aria-label="{}">)", left + width + 20,
                              top + height + 34, esc(title));
  s += fmt::format(R"(<text x="{}" y="14" class="axis">{}</text>)", left, esc(title));
  for (int k = 0; k <= 4; ++k) {
    const double v = lo + (hi - lo) * k / 4;
    s += fmt::format(R"(<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" class="grid"/>)", left, Y(v), left + width, Y(v));
    s += fmt::format(R"(<text x="{}" y="{:.1f}" class="tick" text-anchor="end">{}</text>)", left - 4, Y(v) + 4, axis_tick(v, hi - lo));
  }
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    const Json& b = *boxes[i];
    const double cx = left + step * (i + 0.5), hw = step * 0.32;
    const std::string tip = fmt::format("channel {}: median {}, IQR [{}, {}], range [{}, {}], {} outliers", b["channel"].get<int>(),
                                        tick(b["median"].get<double>()), tick(b["q1"].get<double>()), tick(b["q3"].get<double>()),
                                        tick(b["min"].get<double>()), tick(b["max"].get<double>()), b["outliers"].get<std::int64_t>());
    s += fmt::format(R"(<g><title>{}</title>)", esc(tip));
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}" class="whisker"/>)", cx, Y(b["whisker_hi"].get<double>()),
                     Y(b["whisker_lo"].get<double>()));
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" class="box"/>)", cx - hw, Y(b["q3"].get<double>()),
                     2 * hw, std::max(0.8, Y(b["q1"].get<double>()) - Y(b["q3"].get<double>())));
    s += fmt::format(R"(<line x1="{0:.1f}" y1="{2:.1f}" x2="{1:.1f}" y2="{2:.1f}" class="median"/>)", cx - hw, cx + hw,
                     Y(b["median"].get<double>()));
    for (const auto& e : b["extreme"])
      s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="2" class="outlier"/>)", cx, Y(e.get<double>()));
    s += "</g>";
    if (boxes.size() <= 32 || i % 4 == 0)
      s += fmt::format(R"(<text x="{:.1f}" y="{}" class="tick" text-anchor="middle">{}</text>)", cx, top + height + 14, b["channel"].get<int>());
  }
  return s + "</svg>";
}

std::string metrics_table(const Json& rows, bool tensor_column) {
  std::string s = "<table><tr><th>#</th><th>node</th>";
  if (tensor_column) s += "<th>tensor</th>";
  s += "<th>op</th>";
  for (const char* m : metric_names) s += fmt::format("<th>{}</th>", m);
  s += "</tr>";
  std::size_t i = 0;
  for (const auto& r : rows) {
    s += fmt::format("<tr><td>{}</td><td>{}</td>", ++i, esc(r["node"].get<std::string>()));
    if (tensor_column) s += fmt::format("<td>{}</td>", esc(r.value("tensor", std::string())));
    s += fmt::format("<td>{}</td>", esc(r["op"].get<std::string>()));
    for (const char* m : metric_names) s += fmt::format("<td class=\"num\">{}</td>", cell(m, r["metrics"][m]));
    s += "</tr>";
  }
  return s + "</table>";
}

// Bars of SQNR (dB; infinite = exact, drawn at the largest finite value) per row.
std::string sensitivity_section(const Json& sens, const std::string& id, const std::string& title, const std::string& what) {
  std::vector<std::string> labels;
  std::vector<double> values;
  double top = 0;
  for (const auto& r : sens["rows"]) {
    const double v = num(r["metrics"]["sqnr"]);
    if (std::isfinite(v)) top = std::max(top, v);
  }
  for (const auto& r : sens["rows"]) {
    labels.push_back(sens["type"] == "node" ? r["node"].get<std::string>() : r.value("tensor", r["node"].get<std::string>()));
    const double v = num(r["metrics"]["sqnr"]);
    values.push_back(std::isfinite(v) ? v : top);
  }
  std::string s = fmt::format(R"(<section id="{}"><h2>{}</h2><p>{} Sorted worst first by cosine; the chart shows the output SQNR (dB, higher is better).</p>)",
                              id, esc(title), esc(what));
  if (sens["rows"].empty()) return s + "<p>Nothing to show: the model has none.</p></section>";
  s += bar_chart(labels, values, "output SQNR (dB) with only this one quantized");
  s += metrics_table(sens["rows"], sens["type"] != "node");
  return s + "</section>";
}

}  // namespace

std::string render_debug_report(const Json& r) {
  std::string h;
  h += R"(<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>quantkit accuracy debug report</title><style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:4px}h2{border-bottom:2px solid #ddd;padding-bottom:3px;margin-top:34px}h3{margin-bottom:4px}
table{border-collapse:collapse;font-size:0.86em;margin:8px 0}td,th{border:1px solid #ccc;padding:2px 7px;text-align:left}
th{background:#f2f2f2}td.num{text-align:right;font-family:ui-monospace,monospace}.conclusion{background:#fff7e0;border-left:5px solid #e0a800;padding:10px 14px}
svg.chart{display:block;margin:8px 0 14px 0;font-size:11px}.axis{font-weight:bold;font-size:12px}.label{font-size:11px}.value,.tick{font-size:10px;fill:#444}
.grid{stroke:#ccc;stroke-width:1}.marker{stroke:#d62728;stroke-dasharray:5 3;stroke-width:1.5}.marker-label{fill:#d62728;font-size:10px}
.clip{stroke:#d62728;stroke-dasharray:6 3;stroke-width:1.8}.maxabs{stroke:#333;stroke-dasharray:2 2;stroke-width:1.5}
.box{fill:#9ecae1;stroke:#1f77b4}.median{stroke:#08306b;stroke-width:2}.whisker{stroke:#555}.outlier{fill:#d62728}
nav a{margin-right:12px}code{background:#f4f4f4;padding:0 3px}
</style></head><body>)";
  h += "<h1>quantkit accuracy debug report</h1>";
  h += R"(<nav><a href="#summary">Summary</a><a href="#sensitivity">Sensitivity</a><a href="#weights">Weights</a><a href="#activations">Activations</a><a href="#acc-error">Cumulative error</a><a href="#partial">Partial quantization</a><a href="#distributions">Distributions</a><a href="#channelwise">Channel-wise</a><a href="#ort-saturation">ONNX Runtime without VNNI</a></nav>)";

  // Summary.
  h += R"(<section id="summary"><h2>Summary</h2><table>)";
  h += fmt::format("<tr><th>model</th><td>{}</td></tr>", esc(r["model"].get<std::string>()));
  h += fmt::format("<tr><th>scheme</th><td>{}</td></tr>", esc(r["scheme"].get<std::string>()));
  const std::int64_t calibrated = r["calibration_samples"].get<std::int64_t>();
  h += fmt::format("<tr><th>measured</th><td>output '{}' on {} samples ({})</td></tr>", esc(r["output"].get<std::string>()),
                   r["samples"].get<std::int64_t>(),
                   calibrated ? fmt::format("calibrated on {}", calibrated) : std::string("parameters from the QDQ file"));
  h += fmt::format("<tr><th>quantized nodes</th><td>{}</td></tr>", r["quantized_nodes"].get<std::size_t>());
  const Json& full = r["sensitivity_node"]["full"];
  std::string fm;
  for (const char* m : metric_names) fm += fmt::format("{} {} &nbsp; ", m, cell(m, full[m]));
  h += fmt::format("<tr><th>fully quantized</th><td>{}</td></tr></table>", fm);
  h += fmt::format(R"(<p class="conclusion"><b>Conclusion.</b> {}</p></section>)", esc(r["conclusion"].get<std::string>()));

  h += sensitivity_section(r["sensitivity_node"], "sensitivity", "Node sensitivity",
                           "Only one node quantized at a time (its weight, bias and every activation it reads or writes); the rest float.");
  h += sensitivity_section(r["sensitivity_weight"], "weights", "Weight sensitivity",
                           "Only one node's weight quantized at a time (activations and biases float).");
  h += sensitivity_section(r["sensitivity_activation"], "activations", "Activation sensitivity",
                           "Only one activation quantized at a time (every weight float).");

  // Cumulative error.
  {
    h += R"(<section id="acc-error"><h2>Cumulative error</h2><p>The similarity of every value along the graph (float model vs the quantized variant), in graph order. Values a variant does not quantize show no error until a quantized one feeds them.</p>)";
    // x: every value any curve has, in graph order (the curve with the most rows first); a
    // curve without a value there (its variant does not quantize a graph input) has a gap.
    std::vector<Series> sq, cs;
    std::vector<std::string> xl;
    for (const auto& c : r["acc_error"]["curves"]) {
      std::vector<std::string> labels;
      for (const auto& row : c["rows"]) labels.push_back(row["value"].get<std::string>());
      if (labels.size() > xl.size()) xl = labels;
    }
    for (const auto& c : r["acc_error"]["curves"]) {
      Series a{c["label"].get<std::string>(), std::vector<double>(xl.size(), NAN)};
      Series b{a.label, std::vector<double>(xl.size(), NAN)};
      for (const auto& row : c["rows"]) {
        if (row.contains("error")) continue;
        const auto at = std::find(xl.begin(), xl.end(), row["value"].get<std::string>());
        if (at == xl.end()) continue;
        a.y[static_cast<std::size_t>(at - xl.begin())] = num(row["metrics"]["sqnr"]);
        b.y[static_cast<std::size_t>(at - xl.begin())] = num(row["metrics"]["cosine"]);
      }
      sq.push_back(a);
      cs.push_back(b);
    }
    h += line_chart(sq, xl, "SQNR (dB) of each value, float vs quantized");
    h += line_chart(cs, xl, "cosine of each value");
    const auto& first = r["acc_error"]["curves"][0];
    h += fmt::format("<h3>{}: per value, and running mean of the first n</h3><table><tr><th>#</th><th>value</th><th>op</th>",
                     esc(first["label"].get<std::string>()));
    for (const char* m : metric_names) h += fmt::format("<th>{}</th>", m);
    h += "<th>mean cosine (first n)</th></tr>";
    std::size_t i = 0, k = 0;
    for (const auto& row : first["rows"]) {
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td>", i++, esc(row["value"].get<std::string>()), esc(row["op"].get<std::string>()));
      if (row.contains("error")) {
        h += fmt::format("<td colspan=\"6\">{}</td></tr>", esc(row["error"].get<std::string>()));
        continue;
      }
      for (const char* m : metric_names) h += fmt::format("<td class=\"num\">{}</td>", cell(m, row["metrics"][m]));
      h += fmt::format("<td class=\"num\">{}</td></tr>", cell("cosine", first["average"]["cosine"][k++]));
    }
    h += "</table></section>";
  }

  // Partial quantization.
  {
    const Json& p = r["partial"];
    const double t = p["threshold"].get<double>();
    h += fmt::format(R"(<section id="partial"><h2>Partial quantization</h2><p>Sensitive nodes: those whose quantization alone brings the output cosine under {}. The chart shows the output cosine when the first k of them (worst first) stay float; k = 0 is the fully quantized model.</p>)", t);
    if (p["sensitive"].empty()) {
      h += fmt::format("<p>No node is sensitive at {}: the fully quantized output cosine is {}.</p>", t, cell("cosine", p["full"]["cosine"]));
    } else {
      Series s{"output cosine", {num(p["full"]["cosine"])}};
      std::vector<std::string> xl{"k=0 (all quantized)"};
      for (const auto& st : p["steps"]) {
        s.y.push_back(num(st["metrics"]["cosine"]));
        xl.push_back(fmt::format("k={} +{}", st["k"].get<std::size_t>(), st["kept_float"].back().get<std::string>()));
      }
      h += line_chart({s}, xl, "output cosine with the first k sensitive nodes in float", t, fmt::format("threshold {}", t));
      h += "<table><tr><th>k</th><th>left in float</th><th>cosine</th><th>sqnr</th><th>only this node quantized: cosine</th></tr>";
      for (std::size_t i = 0; i < p["steps"].size(); ++i) {
        const auto& st = p["steps"][i];
        h += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                         st["k"].get<std::size_t>(), esc(st["kept_float"].back().get<std::string>()), cell("cosine", st["metrics"]["cosine"]),
                         cell("sqnr", st["metrics"]["sqnr"]), cell("cosine", p["sensitive"][i]["metrics"]["cosine"]));
      }
      h += "</table>";
    }
    h += "</section>";
  }

  // Distributions.
  h += R"(<section id="distributions"><h2>Distributions</h2><p>The most sensitive weights and activations with the range their quantization parameters keep (dashed red: clipping range; dotted: max |x|), and the most sensitive nodes' float vs quantized outputs with the error.</p>)";
  for (const auto& d : r["distributions"]) {
    if (d["kind"] == "node") {
      h += fmt::format("<h3>node {} ({}): output '{}', cosine {}</h3>", esc(d["node"].get<std::string>()), esc(d["op"].get<std::string>()),
                       esc(d["value"].get<std::string>()), cell("cosine", d["metrics"]["cosine"]));
      h += histogram_chart({{"float", &d["float"]}, {"quantized", &d["quantized"]}}, {}, "float vs quantized output");
      h += histogram_chart({{"quantized - float", &d["error"]}}, {}, "error");
    } else {
      const auto& c = d["clip"];
      h += fmt::format("<h3>{} {} ({}, node {}): {} of {} values clipped ({:.4f} %)</h3>", esc(d["kind"].get<std::string>()),
                       esc(d["tensor"].get<std::string>()), esc(d["format"].get<std::string>()), esc(d["node"].get<std::string>()),
                       d["clipped"].get<std::int64_t>(), d["histogram"]["total"].get<std::int64_t>(),
                       100.0 * d["clipped_fraction"].get<double>());
      std::vector<Marker> m{{c["lo"].get<double>(), "clip " + tick(c["lo"].get<double>()), "clip"},
                            {c["hi"].get<double>(), "clip " + tick(c["hi"].get<double>()), "clip"},
                            {d["max_abs"].get<double>(), "max|x| " + tick(d["max_abs"].get<double>()), "maxabs"},
                            {-d["max_abs"].get<double>(), "-max|x|", "maxabs"}};
      h += histogram_chart({{d["tensor"].get<std::string>(), &d["histogram"]}}, m,
                           c["channels"].get<std::int64_t>() > 1
                               ? fmt::format("{} (clip: widest of {} channels)", d["tensor"].get<std::string>(), c["channels"].get<std::int64_t>())
                               : d["tensor"].get<std::string>());
    }
  }
  h += "</section>";

  // Channel-wise.
  h += R"(<section id="channelwise"><h2>Channel-wise statistics</h2><p>Box plots per channel (box: quartiles, line: median, whiskers: 1.5 IQR, dots: the most extreme outliers). Very uneven channels call for per-channel quantization (weights) or equalization (--cle).</p>)";
  for (const auto& c : r["channelwise"]) {
    h += fmt::format("<h3>{} {}: largest / median channel max|x| = {}</h3>", esc(c["kind"].get<std::string>()), esc(c["tensor"].get<std::string>()),
                     cell("ratio", c["range_ratio"]));
    h += box_chart(c);
  }
  h += "</section>";
  // ONNX Runtime's int16 pair sums.
  if (r.contains("ort_saturation")) {
    const Json& o = r["ort_saturation"];
    h += R"(<section id="ort-saturation"><h2>ONNX Runtime without VNNI</h2><p>On x86-64 CPUs without AVX-VNNI, ONNX Runtime's uint8 x int8 kernels (its default session) add each pair of products into int16 with saturation. Per quantized Conv / MatMul / Gemm on the samples: the pair sums outside int16, the accumulators they change, the most extreme pair sum (int16 holds -32768 to 32767) and the largest accumulator error in steps of the node's output scale. Where any saturate, quantize with <code>--reduce-range</code> (7-bit weights: pairs within &plusmn;32640) or run ONNX Runtime with <code>session.x64quantprecision=1</code>.</p>)";
    h += "<table><tr><th>node</th><th>op</th><th>formats</th><th>K</th><th>pair sums</th><th>saturated</th><th>outputs changed</th><th>worst pair</th><th>max error</th></tr>";
    for (const auto& row : o["rows"]) {
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td>", esc(row["node"].get<std::string>()), esc(row["op"].get<std::string>()),
                       esc(row["formats"].get<std::string>()));
      if (!row["checked"].get<bool>()) {
        h += fmt::format(R"(<td colspan="6">not checked: {}</td></tr>)", esc(row["reason"].get<std::string>()));
        continue;
      }
      const std::int64_t outputs = row["outputs"].get<std::int64_t>(), hit = row["affected_outputs"].get<std::int64_t>();
      const std::int64_t hi = row["max_pair"].get<std::int64_t>(), lo = row["min_pair"].get<std::int64_t>();
      const double steps = num(row["max_error_steps"]);
      h += fmt::format(R"(<td class="num">{}</td><td class="num">{}</td><td class="num">{}</td><td class="num">{} of {} ({:.2f}%)</td><td class="num">{}</td><td class="num">{}</td></tr>)",
                       row["reduction"].get<std::int64_t>(), row["pairs"].get<std::int64_t>(),
                       row["saturated_pairs"].get<std::int64_t>(), hit, outputs,
                       outputs ? 100.0 * static_cast<double>(hit) / static_cast<double>(outputs) : 0.0, -lo > hi ? lo : hi,
                       hit == 0 ? std::string("0") : steps > 0 ? tick(steps) + " steps" : tick(num(row["max_error"])));
    }
    h += fmt::format("</table><p>{} of {} checked nodes saturate.", o["saturating"].get<std::size_t>(),
                     o["checked"].get<std::size_t>());
    if (o.contains("effect") && o["effect"].contains("integer_vs_float")) {
      const Json& e = o["effect"];
      h += fmt::format(" Output '{}' in the integer mode (float requantization, as ONNX Runtime): cosine to the float "
                       "model {} exact, {} with these pair sums",
                       esc(e["output"].get<std::string>()), cell("cosine", e["integer_vs_float"]["cosine"]),
                       cell("cosine", e["ort_no_vnni_vs_float"]["cosine"]));
      if (e.contains("argmax_same"))
        h += fmt::format("; the same top class on {} of {} samples", e["argmax_same"].get<std::int64_t>(),
                         e["argmax_samples"].get<std::int64_t>());
      h += ".";
    }
    h += "</p></section>";
  }
  h += "<footer><p>Written by <code>quantkit debug runall</code>; the same data is in report.json.</p></footer></body></html>\n";
  return h;
}

}  // namespace cli
}  // namespace quantkit
