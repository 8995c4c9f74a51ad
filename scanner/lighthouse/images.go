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
	// cost as much as the rest of the extraction (dataURI reads them); decodeDetails finds
	// their ends many bytes at a time.
	var strip filmstrip
	if a, ok := l.Audits["screenshot-thumbnails"]; ok && len(a.Details) > 0 {
		decodeDetails(a.Details, &strip)
	}
	var final frame
	if a, ok := l.Audits["final-screenshot"]; ok && len(a.Details) > 0 {
		decodeDetails(a.Details, &final)
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
		if w, h, ok := jpegSize(data); ok {
			im.Width, im.Height = w, h
		} else if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
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

// filmstrip is screenshot-thumbnails' details as images reads them; final-screenshot's are a
// frame.
type filmstrip struct {
	Items []frame `json:"items"`
}

type frame struct {
	Timing float64         `json:"timing"`
	Data   json.RawMessage `json:"data"`
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

// jpegSize reads a JPEG's width and height from its frame header (SOF0 to SOF15 but DHT, JPG
// and DAC), walking the markers before it; ok false when data is not such a JPEG. Lighthouse's
// screenshots are JPEGs: image.DecodeConfig allocated a decoder of 13 kB and a reader of 4 kB a
// picture to read these four bytes (issue 46 item 4).
func jpegSize(data []byte) (width, height int, ok bool) {
	if len(data) < 4 || data[0] != 0xff || data[1] != 0xd8 {
		return 0, 0, false
	}
	for i := 2; i+4 <= len(data); {
		if data[i] != 0xff {
			return 0, 0, false
		}
		m := data[i+1]
		switch {
		case m == 0xff: // fill byte
			i++
			continue
		case m == 0xd8 || m == 0x01 || m >= 0xd0 && m <= 0xd7: // markers without a segment
			i += 2
			continue
		case m == 0xd9 || m == 0xda: // end of image, start of scan: no frame header before
			return 0, 0, false
		}
		n := int(data[i+2])<<8 | int(data[i+3])
		if n < 2 {
			return 0, 0, false
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			if n < 7 || i+9 > len(data) {
				return 0, 0, false
			}
			height, width = int(data[i+5])<<8|int(data[i+6]), int(data[i+7])<<8|int(data[i+8])
			return width, height, width > 0 && height > 0
		}
		i += 2 + n
	}
	return 0, 0, false
}
