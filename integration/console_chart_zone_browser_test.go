package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/mediagw/mediagw/internal/testbrowser"
)

// With a task of the day charted, in a real browser whose zone is ten hours behind UTC (Pacific/Honolulu), the overview's daily
// charts name each point by the UTC day it counts, as the charts' tables do ("Time (UTC)"):
// hovering the newest point, the legend reads that day at 12:00am. Before, uPlot wrote the times
// in the browser's zone, so every day of the chart read as the day before, at 2:00pm.
func TestConsoleDayChartsInUTCInABrowser(t *testing.T) {
	e := startConsole(t)
	task := e.createTask(t, "mg-console-acme", `{"model":"sim-video","content":[{"type":"text","text":"a harbour at dusk"}]}`)
	waitTaskStatus(t, e.base, "mg-console-acme", task, "succeeded") // a day total to chart
	b := browserTab{t: t, ctx: testbrowser.New(t, 1280, 900, 2*time.Minute), console: e.console}
	b.do("a zone behind UTC", chromedp.Func(func(ctx context.Context, tab *chromedp.Target) error {
		_, err := cdp.Call(ctx, tab, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Pacific/Honolulu"})
		return err
	}))
	b.login("admin", consolePasswords["admin"], "#chart-days-requests canvas")
	if !b.eval(`new Date(0).getTimezoneOffset() === 600`) {
		t.Fatal("the browser is not in Pacific/Honolulu's zone (UTC-10)")
	}
	// The newest point's time, from the page's own chart data (so no clock of the test's is read).
	newest, err := chromedp.Run(b.ctx, chromedp.Evaluate[int64](
		`(c => c.x[c.x.length - 1])(JSON.parse(document.getElementById('chart-data').textContent).find(c => c.id === 'days-requests'))`))
	if err != nil {
		t.Fatal(err)
	}
	// Move the cursor to the chart's right end: the legend shows the nearest point, the newest.
	legend, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`(() => {
		const over = document.querySelector('#chart-days-requests .u-over'), r = over.getBoundingClientRect();
		over.dispatchEvent(new MouseEvent('mousemove', {clientX: r.right - 1, clientY: r.top + r.height / 2, bubbles: true}));
		return document.querySelector('#chart-days-requests .u-legend .u-value').textContent;
	})()`))
	want := time.Unix(newest, 0).UTC().Format(time.DateOnly) + " 12:00am"
	if err != nil || strings.TrimSpace(legend) != want {
		t.Errorf("the daily chart's newest point reads %q (%v), want its UTC day %q", legend, err, want)
	}
}
