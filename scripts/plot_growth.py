#!/usr/bin/env python3
"""plot_growth.py -- fit and draw the growth series of `kctx_bench_growth`.

Reads `metric growth_<series> value=<v> unit=<u> x=<x> ...` lines (files
named on the command line, or stdin), and for every series:

  * fits the growth, measured: the log-log slope over all points, the best
    two-segment log-log fit (where the growth changes), and the affine model
    value = a + b * x (weighted least squares on relative error), whose
    crossover x = a / b is where the per-unit cost overtakes the fixed cost,
    i.e. where a flat series leaves flat;
  * writes docs/img/growth_<series>.svg (or --out DIR): the points, the
    fitted affine curve, log axes where a range spans decades;
  * prints one Markdown table row per series on stdout (for
    docs/benchmarks.md).

Standard library only; the SVG is written by hand.

    build/bench/kctx_bench_growth > growth.txt
    python3 scripts/plot_growth.py growth.txt
"""
import argparse
import math
import os
import re
import sys

LINE = re.compile(r"^metric growth_(\S+) value=(\S+) unit=(\S+)(.*)$")

X_LABEL = {
    "launch_sync_vs_tasks": "tasks per callable",
    "launch_vs_args": "tensor arguments",
    "replay_vs_graphs": "graphs sharing one context",
    "prepare_vs_size": "image size",
    "prepare_vs_callables": "callables already prepared",
    "launch_vs_callables": "callables prepared",
    "memory_device_vs_callables": "callables prepared",
    "memory_host_vs_callables": "callables prepared",
    "memory_host_other_vs_callables": "callables prepared",
}
X_UNIT = {"prepare_vs_size": "B"}
Y_LABEL = {
    "launch_sync_vs_tasks": "launch + synchronise",
    "launch_vs_args": "launch (host time)",
    "replay_vs_graphs": "time per replay",
    "prepare_vs_size": "kctx_prepare",
    "prepare_vs_callables": "kctx_prepare",
    "launch_vs_callables": "launch of the id prepared last (host time)",
    "memory_device_vs_callables": "device bytes of the context",
    "memory_host_vs_callables": "host heap bytes",
    "memory_host_other_vs_callables": "host heap bytes besides the images kept",
}


def read(paths):
    series = {}
    files = [open(p) for p in paths] if paths else [sys.stdin]
    for f in files:
        for line in f:
            m = LINE.match(line.strip())
            if not m:
                continue
            fields = dict(kv.split("=", 1) for kv in m.group(4).split() if "=" in kv)
            if "x" not in fields:
                continue
            s = series.setdefault(m.group(1), {"unit": m.group(3), "pts": []})
            s["pts"].append((float(fields["x"]), float(m.group(2))))
    for s in series.values():
        s["pts"].sort()
    return series


def linfit(xs, ys):
    """Least squares y = c + k x; returns (k, c, sse)."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, my, 0.0
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    c = my - k * mx
    return k, c, sum((y - c - k * x) ** 2 for x, y in zip(xs, ys))


def affine(pts):
    """Weighted least squares y = a + b x, weights 1/y^2 (relative error)."""
    sw = swx = swxx = swy = swxy = 0.0
    for x, y in pts:
        w = 1.0 / (y * y) if y > 0 else 0.0
        sw += w
        swx += w * x
        swxx += w * x * x
        swy += w * y
        swxy += w * x * y
    det = sw * swxx - swx * swx
    if det == 0:
        return (swy / sw if sw else 0.0), 0.0
    a = (swxx * swy - swx * swxy) / det
    b = (sw * swxy - swx * swy) / det
    return a, b


def growth_word(k):
    if abs(k) < 0.1:
        return "flat"
    if k < 0:
        return "falling"
    if k < 0.75:
        return "sub-linear"
    if k <= 1.25:
        return "linear"
    if k <= 1.75:
        return "between linear and quadratic"
    return "quadratic or worse"


def power_fit(pts):
    """value = a + c * x^k: k on a grid over [0.05, 3], a and c by weighted
    (1/y^2: relative error) least squares for each k; the best k wins."""
    best = None
    for i in range(5, 301):
        k = i / 100.0
        sw = swu = swuu = swy = swuy = 0.0
        for x, y in pts:
            if y <= 0:
                continue
            w = 1.0 / (y * y)
            u = x ** k
            sw += w
            swu += w * u
            swuu += w * u * u
            swy += w * y
            swuy += w * u * y
        det = sw * swuu - swu * swu
        if det == 0:
            continue
        a = (swuu * swy - swu * swuy) / det
        c = (sw * swuy - swu * swy) / det
        err = sum(((y - a - c * x ** k) / y) ** 2 for x, y in pts if y > 0)
        if best is None or err < best[0]:
            best = (err, a, c, k)
    return best


def fit(pts):
    lp = [(math.log10(x), math.log10(y)) for x, y in pts if x > 0 and y > 0]
    out = {"n": len(pts)}
    if len(lp) >= 2:
        k, c, _ = linfit([p[0] for p in lp], [p[1] for p in lp])
        out["slope"] = k
        k2, _, _ = linfit([p[0] for p in lp[-3:]], [p[1] for p in lp[-3:]])
        out["top_slope"] = k2
    bf = power_fit(pts)
    if bf and bf[2] > 0:
        err, a, c, k = bf
        out.update(a=a, c=c, k=k, rms=math.sqrt(err / len(pts)))
        out["cross"] = (a / c) ** (1.0 / k) if a > 0 else None
    else:  # nothing grows: the mean
        out.update(a=sum(y for _, y in pts) / len(pts), c=0.0, k=0.0, rms=None, cross=None)
    return out


def fmt(v, unit):
    if unit == "ns":
        for div, u in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
            if abs(v) >= div:
                return "%.3g %s" % (v / div, u)
        return "%.3g ns" % v
    if unit == "B":
        for div, u in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if abs(v) >= div:
                return "%.3g %s" % (v / div, u)
        return "%.3g B" % v
    return "%.3g%s" % (v, (" " + unit) if unit else "")


def describe(name, s, f):
    """The fitted growth in words: the flat part a, the growing part c x^k,
    where the growing part overtakes the flat one (x*, where the series
    leaves flat), the log-log slopes over the range and over its top."""
    unit, xu = s["unit"], X_UNIT.get(name, "")
    pts = s["pts"]
    lo, hi = pts[0][0], pts[-1][0]
    def fx(v):
        if xu:
            return fmt(v, xu)
        return "%d" % round(v) if v == round(v) else "%.0f" % float("%.3g" % v)

    parts = []
    ys = [y for _, y in pts]
    if f["c"] > 0 and f["cross"] is not None and f["cross"] >= hi:
        parts.append("flat over the whole range: %s..%s (a fitted growing part would reach the "
                     "flat one only past x = %s)" % (fmt(min(ys), unit), fmt(max(ys), unit),
                                                      fx(hi)))
    elif f["c"] > 0:
        k = f["k"]
        grow = "%s x^%.2f" % (fmt(f["c"], unit), k)
        parts.append("fit %s + %s (rms %.0f%%)" % (fmt(max(f["a"], 0.0), unit), grow,
                                                  100 * f["rms"]))
        if f["cross"] is None:
            parts.append("%s (x^%.2f) over the whole range" % (growth_word(k), k))
        elif f["cross"] <= lo:
            parts.append("%s (x^%.2f) from the first point" % (growth_word(k), k))
        else:
            parts.append("flat up to x = %s, then %s (x^%.2f)" % (fx(f["cross"]),
                                                                  growth_word(k), k))
    else:
        parts.append("flat: %s..%s, mean %s (no growing part fits)" % (
            fmt(min(ys), unit), fmt(max(ys), unit), fmt(f["a"], unit)))
    if "slope" in f:
        parts.append("log-log slope %.2f over %s..%s, %.2f over the top three points" % (
            f["slope"], fx(lo if lo > 0 else pts[1][0]), fx(hi), f["top_slope"]))
    return "; ".join(parts)


# ---- SVG --------------------------------------------------------------------------------

W, H = 720, 440
L, R, T, B = 90, 30, 50, 60


class Axis:
    def __init__(self, lo, hi, log, p0, p1):
        self.log = log
        if log:
            self.lo, self.hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
        else:
            self.lo, self.hi = lo, hi
            if self.hi <= self.lo:
                self.hi = self.lo + 1
        self.p0, self.p1 = p0, p1

    def __call__(self, v):
        t = math.log10(v) if self.log else v
        return self.p0 + (t - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)

    def ticks(self, binary=False):
        if self.log and binary:  # powers of 4 (1 KiB, 4 KiB, ...) inside the decades
            lo, hi = 10.0 ** self.lo, 10.0 ** self.hi
            return [4.0 ** e for e in range(0, 40) if lo <= 4.0 ** e <= hi]
        if self.log:
            return [10.0 ** e for e in range(int(self.lo), int(self.hi) + 1)]
        span = self.hi - self.lo
        step = 10 ** math.floor(math.log10(span / 5))
        for m in (1, 2, 5, 10):
            if span / (step * m) <= 8:
                step *= m
                break
        v = math.ceil(self.lo / step) * step
        out = []
        while v <= self.hi + 1e-9:
            out.append(v)
            v += step
        return out


def nice_linear_range(lo, hi):
    lo = min(0.0, lo)
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / 5)) if span > 0 else 1
    for m in (1, 2, 5, 10):
        if span / (step * m) <= 8:
            step *= m
            break
    return lo, math.ceil(hi / step) * step


def esc(t):
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg(name, s, f, title_extra, note):
    pts = s["pts"]
    unit, xu = s["unit"], X_UNIT.get(name, "")
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    xlog = min(xs) > 0 and max(xs) / min(xs) >= 100
    ylog = min(ys) > 0 and max(ys) / min(ys) >= 30
    if xlog:
        ax = Axis(min(xs), max(xs), True, L, W - R)
    else:
        lo, hi = nice_linear_range(min(xs), max(xs))
        ax = Axis(lo, hi, False, L, W - R)
    if ylog:
        ay = Axis(min(ys), max(ys), True, H - B, T)
    else:
        lo, hi = nice_linear_range(min(ys), max(ys) * 1.1)
        ay = Axis(lo, hi, False, H - B, T)
    o = []
    o.append('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
             'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' % (W, H, W, H))
    o.append('<rect width="100%" height="100%" fill="white"/>')
    o.append('<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>' % (
        L, esc("growth_%s" % name)))
    o.append('<text x="%d" y="40" font-size="11" fill="#444">%s</text>' % (L, esc(title_extra)))
    # grid and ticks
    for tv in ax.ticks(binary=xu == "B"):
        px = ax(tv)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (px, T, px, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (
            px, H - B + 16, esc(fmt(tv, xu) if xu else "%g" % tv)))
    for tv in ay.ticks(binary=unit == "B"):
        py = ay(tv)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py, W - R, py))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (
            L - 6, py + 4, esc(fmt(tv, unit))))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>' % (
        L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s%s</text>' % (
        (L + W - R) // 2, H - 18, esc(X_LABEL.get(name, "x")), " (log scale)" if xlog else ""))
    o.append('<text transform="translate(18,%d) rotate(-90)" text-anchor="middle">%s%s</text>' % (
        (T + H - B) // 2, esc(Y_LABEL.get(name, "value")), " (log scale)" if ylog else ""))
    # the fitted curve a + c x^k, sampled across the x range
    a, c, k = f["a"], f["c"], f["k"]
    lo_x, hi_x = min(xs), max(xs)
    path = []
    for i in range(101):
        if xlog:
            x = 10 ** (math.log10(lo_x) + (math.log10(hi_x) - math.log10(lo_x)) * i / 100)
        else:
            x = lo_x + (hi_x - lo_x) * i / 100
        y = a + c * x ** k
        if ylog and y <= 0:
            continue
        py = min(max(ay(y), T), H - B)
        path.append("%s%.1f,%.1f" % ("M" if not path else "L", ax(x), py))
    if path:
        o.append('<path d="%s" fill="none" stroke="#d62728" stroke-width="1.5" '
                 'stroke-dasharray="6,4"/>' % " ".join(path))
    for x, y in pts:
        o.append('<circle cx="%.1f" cy="%.1f" r="4" fill="#1f77b4"/>' % (ax(x), ay(y)))
    # legend
    lx, ly = L + 10, T + 16
    o.append('<circle cx="%d" cy="%d" r="4" fill="#1f77b4"/>' % (lx, ly - 4))
    o.append('<text x="%d" y="%d">measured%s</text>' % (
        lx + 10, ly, " (median)" if unit == "ns" else ""))
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#d62728" stroke-width="1.5" '
             'stroke-dasharray="6,4"/>' % (lx - 6, ly + 12, lx + 6, ly + 12))
    o.append('<text x="%d" y="%d">fit: %s + %s &#215; x^%.2f</text>' % (
        lx + 10, ly + 16, esc(fmt(max(a, 0.0), unit)), esc(fmt(c, unit)), k))
    if note:
        o.append('<text x="%d" y="%d" font-size="10" fill="#666" text-anchor="end">%s</text>' % (
            W - 4, H - 4, esc(note)))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", help="files of metric lines (default: stdin)")
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "docs", "img"))
    ap.add_argument("--note", default="", help="a line under each title (e.g. the run's date)")
    args = ap.parse_args()
    series = read(args.files)
    if not series:
        sys.exit("plot_growth.py: no `metric growth_* ... x=...` lines read")
    os.makedirs(args.out, exist_ok=True)
    print("| series | points | fitted growth |")
    print("| --- | --- | --- |")
    for name in sorted(series):
        s = series[name]
        f = fit(s["pts"])
        d = describe(name, s, f)
        words = d.split("; ")
        extra = words[1] if words[0].startswith("fit ") else words[0]
        path = os.path.join(args.out, "growth_%s.svg" % name)
        with open(path, "w") as fh:
            fh.write(svg(name, s, f, extra, args.note))
        pts = ", ".join("%s: %s" % (fmt(x, X_UNIT.get(name, "")) if X_UNIT.get(name) else "%g" % x,
                                    fmt(y, s["unit"])) for x, y in s["pts"])
        print("| `growth_%s` | %s | %s |" % (name, pts, d))
        print("wrote %s" % path, file=sys.stderr)


if __name__ == "__main__":
    main()
