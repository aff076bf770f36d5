#include "timeline/gantt_svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "timeline/text_file.h"

namespace psched::timeline {
namespace {

constexpr int kLabelWidth = 90;
constexpr int kRowHeight = 34;
constexpr int kTop = 40;
constexpr int kAxisHeight = 40;
constexpr int kRightMargin = 20;

std::string Escape(const std::string& text) {
  std::string out;
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
      default:
        out += c;
    }
  }
  return out;
}

// Neighbouring op ids get distant hues (golden-angle steps), so adjacent bars differ.
std::string OpColour(int op) {
  const double hue = std::fmod(static_cast<double>(op) * 137.508, 360.0);
  const int lightness = 55 + (op % 3) * 8;
  return absl::StrFormat("hsl(%.0f,65%%,%d%%)", hue, lightness);
}

// A 1-2-5 step giving about `ticks` intervals over [0, span].
double TickStep(double span, int ticks) {
  const double raw = span / ticks;
  const double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (base * m >= raw) return base * m;
  }
  return base * 10;
}

}  // namespace

std::string GanttSvg(std::span<const std::string> device_names, std::span<const SubtaskSpan> spans,
                     double makespan_us, const GanttOptions& options) {
  const int devices = static_cast<int>(device_names.size());
  const int plot_width = std::max(100, options.width_px - kLabelWidth - kRightMargin);
  const int height = kTop + devices * kRowHeight + kAxisHeight;
  const double span_ms = std::max(makespan_us / 1000.0, 1e-3);
  const double step = TickStep(span_ms, 10);
  const double axis_ms = std::ceil(span_ms / step - 1e-9) * step;
  const double px_per_ms = plot_width / axis_ms;
  auto x = [&](double us) { return kLabelWidth + us / 1000.0 * px_per_ms; };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      options.width_px, height);
  if (!options.title.empty()) {
    absl::StrAppend(
        &svg,
        absl::StrFormat("<text x=\"%d\" y=\"20\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
                        kLabelWidth, Escape(options.title)));
  }
  for (int d = 0; d < devices; ++d) {
    const int y = kTop + d * kRowHeight;
    absl::StrAppend(
        &svg,
        absl::StrFormat("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n"
                        "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
                        kLabelWidth, y, plot_width, kRowHeight, d % 2 == 0 ? "#f4f4f4" : "#fafafa",
                        kLabelWidth - 8, y + kRowHeight / 2 + 4,
                        Escape(device_names[static_cast<size_t>(d)])));
  }
  for (const SubtaskSpan& s : spans) {
    if (s.device < 0 || s.device >= devices) continue;
    const double x0 = x(s.start_us);
    const double w = std::max(0.5, x(s.end_us) - x0);
    const int y = kTop + s.device * kRowHeight + 3;
    std::string tip = absl::StrFormat("%s (op %d)", s.op, s.op_id);
    if (s.axis != model::SplitAxis::kNone) {
      absl::StrAppend(
          &tip, absl::StrFormat(" %s [%d, %d)", model::SplitAxisName(s.axis), s.begin, s.end));
    }
    absl::StrAppend(&tip, absl::StrFormat(": %.1f-%.1f us", s.start_us, s.end_us));
    absl::StrAppend(
        &svg, absl::StrFormat("<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                              "stroke=\"#333\" stroke-width=\"0.4\"><title>%s</title></rect>\n",
                              x0, y, w, kRowHeight - 6, OpColour(s.op_id), Escape(tip)));
    // Label a bar only when its op id fits inside it.
    const std::string label = std::to_string(s.op_id);
    if (w > 7.0 * static_cast<double>(label.size()) + 4) {
      absl::StrAppend(
          &svg, absl::StrFormat(
                    "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n",
                    x0 + w / 2, y + (kRowHeight - 6) / 2 + 4, label));
    }
  }
  const int axis_y = kTop + devices * kRowHeight;
  absl::StrAppend(
      &svg, absl::StrFormat("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                            kLabelWidth, axis_y, kLabelWidth + plot_width, axis_y));
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  for (int k = 0; k * step <= axis_ms + 1e-9; ++k) {
    const double t = k * step;
    const double tx = kLabelWidth + t * px_per_ms;
    absl::StrAppend(
        &svg,
        absl::StrFormat("<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"black\"/>\n"
                        "<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n",
                        tx, axis_y, tx, axis_y + 5, tx, axis_y + 18, decimals, t));
  }
  absl::StrAppend(
      &svg,
      absl::StrFormat(
          "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (ms); makespan %.3f ms</text>\n",
          kLabelWidth + plot_width / 2, axis_y + 34, makespan_us / 1000.0));
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

absl::Status WriteGanttSvg(const std::string& path, std::span<const std::string> devices,
                           std::span<const SubtaskSpan> spans, double makespan_us,
                           const GanttOptions& options) {
  return WriteTextFile(path, GanttSvg(devices, spans, makespan_us, options), "Gantt chart");
}

}  // namespace psched::timeline
