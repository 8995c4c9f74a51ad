package svg

import "sitepulse/store"

// FilmColumns is how many moments a filmstrip shows at most.
const FilmColumns = 10

// FilmCell is a filmstrip at one moment: the picture it showed (PageImage.Index; -1 before its
// first frame) and whether the LCP happened by then and not at the moment before.
type FilmCell struct {
	Image int
	LCP   bool
}

// FilmGrid lays both runs' filmstrips on one time axis: moments every step ms up to the later
// of the last frame and the LCP (at most FilmColumns of them), and at each moment the picture
// each run showed then, with the moment its LCP (ms; 0 when unknown) happened by marked.
func FilmGrid(before, after []store.PageImage, lcpBefore, lcpAfter int) (moments []int, rows [2][]FilmCell) {
	frames := [2][]store.Frame{}
	frames[0], _ = store.Filmstrip(before)
	frames[1], _ = store.Filmstrip(after)
	span := max(lcpBefore, lcpAfter)
	for _, f := range frames {
		if len(f) > 0 {
			span = max(span, f[len(f)-1].TimingMs)
		}
	}
	if len(frames[0])+len(frames[1]) == 0 {
		return nil, rows
	}
	step := niceStep(max(span, 1), FilmColumns)
	for t := step; len(moments) < FilmColumns; t += step {
		moments = append(moments, t)
		if t >= span {
			break
		}
	}
	for i, lcp := range []int{lcpBefore, lcpAfter} {
		marked := false
		for _, t := range moments {
			c := FilmCell{Image: -1}
			for _, f := range frames[i] {
				if f.TimingMs <= t {
					c.Image = f.Image
				}
			}
			if lcp > 0 && !marked && t >= lcp {
				c.LCP, marked = true, true
			}
			rows[i] = append(rows[i], c)
		}
	}
	return moments, rows
}
