package lighthouse

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"hash/maphash"
	"image"
	_ "image/jpeg" // the headers of Lighthouse's screenshots
	_ "image/png"
	"sort"

	"sitepulse/store"
)

// images decodes the run's filmstrip (screenshot-thumbnails) and final screenshot
// (final-screenshot), data URIs in the report, into its distinct pictures (store.PageImage):
// a picture the filmstrip shows several times, or that is also the final screenshot, is kept
// once with every time it is shown. A frame that is not an image of a kept format is skipped.
func (l *lhr) images() []store.PageImage {
	// The data URIs stay raw JSON: decoding 100 KB of base64 as a JSON string, rune by rune,
	// cost as much as the rest of the extraction (dataURI reads them); decodeFilmstrip and
	// decodeFrame do not go through them byte by byte either.
	var strip filmstrip
	if a, ok := l.Audits["screenshot-thumbnails"]; ok && len(a.Details) > 0 {
		strip = decodeFilmstrip(a.Details)
	}
	var final frame
	if a, ok := l.Audits["final-screenshot"]; ok && len(a.Details) > 0 {
		final = decodeFrame(a.Details)
	}
	sort.SliceStable(strip.Items, func(i, j int) bool { return strip.Items[i].Timing < strip.Items[j].Timing })

	out := []store.PageImage{}
	// A picture is found again by its bytes, and a frame by its data URI (a frame the filmstrip
	// shows again is not decoded again): by hash (maphash), then compared.
	seed := maphash.MakeSeed()
	byData := map[uint64][]int{}
	keep := func(uri []byte) (int, bool) {
		mime, data, ok := decodeDataURI(uri)
		if !ok {
			return 0, false
		}
		h := maphash.Bytes(seed, data)
		for _, i := range byData[h] {
			if bytes.Equal(out[i].Data, data) {
				return i, true
			}
		}
		if len(out) == store.MaxPageImages {
			return 0, false
		}
		im := store.PageImage{Index: len(out), MIME: mime, Timings: []int{}, Bytes: len(data), Data: data}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			im.Width, im.Height = cfg.Width, cfg.Height
		}
		byData[h] = append(byData[h], im.Index)
		out = append(out, im)
		return im.Index, true
	}
	type frameSeen struct {
		uri   []byte
		index int
		kept  bool
	}
	byURI := map[uint64][]frameSeen{}
	add := func(raw json.RawMessage) (int, bool) {
		uri := dataURI(raw)
		h := maphash.Bytes(seed, uri)
		for _, f := range byURI[h] {
			if bytes.Equal(f.uri, uri) {
				return f.index, f.kept
			}
		}
		i, ok := keep(uri)
		byURI[h] = append(byURI[h], frameSeen{uri, i, ok})
		return i, ok
	}
	for _, f := range strip.Items {
		if i, ok := add(f.Data); ok {
			out[i].Timings = append(out[i].Timings, ms(f.Timing))
		}
	}
	if i, ok := add(final.Data); ok {
		out[i].Final = true
	}
	return out
}

// dataURI is a JSON string holding a data URI: its bytes as they are when, as Lighthouse writes
// them, they need no unescaping; else decoded as JSON.
func dataURI(raw json.RawMessage) []byte {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	var s string
	json.Unmarshal(raw, &s)
	return []byte(s)
}

// decodeDataURI reads a base64 data URI of a kept image format (store.KeepableImage) straight
// into the picture's bytes.
func decodeDataURI(uri []byte) (mime string, data []byte, ok bool) {
	rest, found := bytes.CutPrefix(uri, []byte("data:"))
	if !found {
		return "", nil, false
	}
	meta, payload, found := bytes.Cut(rest, []byte(","))
	if !found {
		return "", nil, false
	}
	m, enc, _ := bytes.Cut(meta, []byte(";"))
	if string(enc) != "base64" || base64.StdEncoding.DecodedLen(len(payload)) > store.MaxPageImageSize+3 {
		return "", nil, false
	}
	data = make([]byte, base64.StdEncoding.DecodedLen(len(payload)))
	n, err := base64.StdEncoding.Decode(data, payload)
	if err != nil || !store.KeepableImage(string(m), n) {
		return "", nil, false
	}
	return string(m), data[:n], true
}
