package lighthouse

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"
)

// jpegSize reads what image.DecodeConfig reads of every picture of the real reports (PSI's and
// local Lighthouse's), and says no where DecodeConfig fails, without panicking on cut pictures.
func TestJPEGSizeIsDecodeConfigs(t *testing.T) {
	var pictures [][]byte
	for _, pattern := range []string{"../../testdata/psi*/*.json", "../../testdata/why/*/*.json"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ExtractPSI(body)
			if err != nil {
				if r, err = ExtractLighthouse(body); err != nil {
					continue
				}
			}
			for _, im := range r.Images {
				pictures = append(pictures, im.Data)
			}
		}
	}
	if len(pictures) < 50 {
		t.Fatalf("%d pictures in the fixtures", len(pictures))
	}
	check := func(data []byte) {
		t.Helper()
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		w, h, ok := jpegSize(data)
		if format != "jpeg" {
			if ok {
				t.Errorf("%d bytes not a JPEG to DecodeConfig (%q, %v) read as %dx%d", len(data), format, err, w, h)
			}
			return
		}
		if ok != (err == nil) || ok && (w != cfg.Width || h != cfg.Height) {
			t.Errorf("%d bytes: jpegSize %v %dx%d, DecodeConfig %v %dx%d", len(data), ok, w, h, err, cfg.Width, cfg.Height)
		}
	}
	for _, p := range pictures {
		check(p)
		for _, n := range []int{0, 1, 2, 3, 4, 20, 100, 200, 400, 600} { // cut short
			if n < len(p) {
				check(p[:n])
			}
		}
	}
	for _, p := range [][]byte{nil, {0xff}, {0xff, 0xd8, 0xff, 0xc0, 0, 1}, {0xff, 0xd8, 0xff, 0xe0, 0, 0}, []byte("\x89PNG\r\n\x1a\n")} {
		if w, h, ok := jpegSize(p); ok {
			t.Errorf("%q read as %dx%d", p, w, h)
		}
	}
}
