package demo

import (
	"time"

	"sitepulse/scanner/crux/cruxtest"
)

// The demo's field story (CrUX history, issue 45): the chat widget and the heavier hero image
// reached real users FieldDays before the demo starts, and the 28-day CrUX windows since then
// show phones' LCP and INP climbing on the origin and the home page, a little on desktops; the
// blog and the fast page hold steady; the pricing page's history has ineligible weeks (gaps);
// the about page has too little Chrome traffic for CrUX (no field data).

// FieldDays is how many days before the demo starts its change reached real users.
const FieldDays = 28

// FieldChangeAt is the day the demo's change reached real users: the publish a field verdict
// ties the CrUX rise to.
func FieldChangeAt(now time.Time) time.Time {
	y, m, d := now.UTC().AddDate(0, 0, -FieldDays).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// NoFieldPath is the demo page without CrUX data: the double answers it 404.
const NoFieldPath = "/about"

// CruxDouble is the CrUX History API as the demo site's users would have filled it at now: 40
// weekly periods ending on cruxtest.LastDate(now), for the origin and each demo page but
// NoFieldPath, phone and desktop.
func CruxDouble(now time.Time) *cruxtest.Double {
	d := cruxtest.New(cruxtest.LastDate(now))
	change := FieldChangeAt(now)
	origin := "https://" + Domain
	type devices struct{ phone, desktop cruxtest.Shape }
	steady := func(lcp, inp, cls, fcp, ttfb float64) cruxtest.Shape {
		return cruxtest.Shape{Before: map[string]float64{"lcp": lcp, "inp": inp, "cls": cls, "fcp": fcp, "ttfb": ttfb}}
	}
	changed := func(before, after cruxtest.Shape) cruxtest.Shape {
		before.After, before.ChangeAt = after.Before, change
		return before
	}
	records := map[string]devices{
		origin: {changed(steady(2300, 170, 0.06, 1500, 620), steady(3150, 290, 0.08, 1650, 640)),
			changed(steady(1350, 70, 0.03, 900, 340), steady(1700, 110, 0.04, 980, 350))},
		origin + "/": {changed(steady(2400, 180, 0.05, 1550, 640), steady(3600, 320, 0.09, 1750, 660)),
			changed(steady(1400, 75, 0.02, 950, 350), steady(1850, 120, 0.04, 1050, 360))},
		origin + "/blog/": {steady(2100, 150, 0.04, 1400, 600), steady(1250, 60, 0.02, 850, 330)},
		origin + "/fast":  {steady(1200, 90, 0.01, 900, 400), steady(700, 40, 0.0, 500, 220)},
	}
	pricing := devices{steady(2600, 210, 0.11, 1700, 700), steady(1500, 90, 0.05, 1000, 380)}
	pricing.phone.Gaps, pricing.phone.NaNGaps = []int{9, 10}, []int{24}
	records[origin+"/pricing"] = pricing
	for target, r := range records {
		d.Set(target, "PHONE", r.phone)
		d.Set(target, "DESKTOP", r.desktop)
	}
	return d
}
