//! The seller page's chart: release latencies as an inline SVG bar chart
//! (one bar per released buy, oldest first), drawn server-side with no
//! script. Pure: numbers in, markup out.

use crate::views::Latency;
use maud::{html, Markup};

/// Chart size in SVG user units.
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
/// Room for the axis labels.
const LEFT: f64 = 48.0;
const BOTTOM: f64 = 20.0;
/// Height of a zero-second bar (visible, not mistaken for a gap).
const MIN_BAR: f64 = 2.0;
/// Most bars drawn (the newest ones).
pub const MAX_BARS: usize = 200;

/// The chart of `latencies` (oldest first); an empty note when none.
pub fn latency_chart(latencies: &[Latency]) -> Markup {
    let shown = &latencies[latencies.len().saturating_sub(MAX_BARS)..];
    if shown.is_empty() {
        return html! { p.empty { "No releases yet." } };
    }
    let top = shown
        .iter()
        .map(|l| l.secs.max(0))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let plot_w = WIDTH - LEFT;
    let plot_h = HEIGHT - BOTTOM;
    let slot = plot_w / shown.len() as f64;
    let bar_w = (slot * 0.8).clamp(1.0, 24.0);
    html! {
        svg.chart role="img" viewBox=(format!("0 0 {WIDTH} {HEIGHT}")) width="100%"
            aria-label=(format!("release latency of {} buys, at most {} s", shown.len(), top)) {
            line x1=(LEFT) y1="0" x2=(LEFT) y2=(plot_h) stroke="#888" {}
            line x1=(LEFT) y1=(plot_h) x2=(WIDTH) y2=(plot_h) stroke="#888" {}
            text x=(LEFT - 4.0) y="12" text-anchor="end" font-size="11" { (top) " s" }
            text x=(LEFT - 4.0) y=(plot_h) text-anchor="end" font-size="11" { "0" }
            @for (i, l) in shown.iter().enumerate() {
                // a release in the buy's own second still shows as a sliver
                @let h = ((l.secs.max(0) as f64 / top) * (plot_h - 2.0)).max(MIN_BAR);
                rect.bar x=(format!("{:.1}", LEFT + i as f64 * slot + (slot - bar_w) / 2.0))
                    y=(format!("{:.1}", plot_h - h)) width=(format!("{bar_w:.1}"))
                    height=(format!("{h:.1}")) data-secs=(l.secs) {
                    title { "buy " (l.buy) ": released after " (l.secs) " s" }
                }
            }
            text x=(LEFT) y=(HEIGHT - 4.0) font-size="11" { "oldest" }
            text x=(WIDTH) y=(HEIGHT - 4.0) text-anchor="end" font-size="11" { "newest" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(secs: i64) -> Latency {
        Latency {
            buy: format!("sig{secs}"),
            secs,
        }
    }

    #[test]
    fn one_bar_per_release_scaled_to_the_slowest() {
        let svg = latency_chart(&[l(2), l(8), l(4)]).into_string();
        assert_eq!(svg.matches("<rect").count(), 3);
        assert!(svg.contains(r#"data-secs="8""#));
        // the slowest bar is the full plot height (158 = 180 - 20 - 2)
        assert!(svg.contains(r#"height="158.0" data-secs="8""#), "{svg}");
        assert!(svg.contains("8 s"));
    }

    #[test]
    fn empty_and_oversized_inputs() {
        assert!(latency_chart(&[]).into_string().contains("No releases yet"));
        let many: Vec<_> = (0..500).map(l).collect();
        let svg = latency_chart(&many).into_string();
        assert_eq!(svg.matches("<rect").count(), MAX_BARS);
        // a negative latency (clock skew) draws as a zero, never breaks the chart
        assert!(latency_chart(&[l(-5)])
            .into_string()
            .contains(r#"height="2.0""#));
    }
}
