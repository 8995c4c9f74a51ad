package lighthouse

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"image"
	_ "image/jpeg" // the headers of Lighthouse's screenshots
	_ "image/png"
	"sort"
	"strings"

	"sitepulse/store"
)

// images decodes the run's filmstrip (screenshot-thumbnails) and final screenshot
// (final-screenshot), data URIs in the report, into its distinct pictures (store.PageImage):
// a picture the filmstrip shows several times, or that is also the final screenshot, is kept
// once with every time it is shown. A frame that is not an image of a kept format is skipped.
func (l *lhr) images() []store.PageImage {
	// The data URIs stay raw JSON: decoding 100 KB of base64 as a JSON string, rune by rune,
	// cost as much as the rest of the extraction (dataURI reads them).
	var strip struct {
		Items []struct {
			Timing float64         `json:"timing"`
			Data   json.RawMessage `json:"data"`
		} `json:"items"`
	}
	l.details("screenshot-thumbnails", &strip)
	var final struct {
		Data json.RawMessage `json:"data"`
	}
	l.details("final-screenshot", &final)
	sort.SliceStable(strip.Items, func(i, j int) bool { return strip.Items[i].Timing < strip.Items[j].Timing })

	out := []store.PageImage{}
	byHash := map[[32]byte]int{}
	add := func(raw json.RawMessage) (int, bool) {
		mime, data, ok := decodeDataURI(dataURI(raw))
		if !ok {
			return 0, false
		}
		h := sha256.Sum256(data)
		if i, seen := byHash[h]; seen {
			return i, true
		}
		if len(out) == store.MaxPageImages {
			return 0, false
		}
		im := store.PageImage{Index: len(out), MIME: mime, Timings: []int{}, Bytes: len(data), Data: data}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			im.Width, im.Height = cfg.Width, cfg.Height
		}
		byHash[h] = im.Index
		out = append(out, im)
		return im.Index, true
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
func dataURI(raw json.RawMessage) string {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && !bytes.ContainsRune(raw, '\\') {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	json.Unmarshal(raw, &s)
	return s
}

// decodeDataURI reads a base64 data URI of a kept image format (store.KeepableImage).
func decodeDataURI(uri string) (mime string, data []byte, ok bool) {
	rest, found := strings.CutPrefix(uri, "data:")
	if !found {
		return "", nil, false
	}
	meta, payload, found := strings.Cut(rest, ",")
	if !found {
		return "", nil, false
	}
	mime, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" || base64.StdEncoding.DecodedLen(len(payload)) > store.MaxPageImageSize+3 {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil || !store.KeepableImage(mime, len(data)) {
		return "", nil, false
	}
	return mime, data, true
}
