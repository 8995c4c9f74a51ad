package lighthouse

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

func TestZZLevels(t *testing.T) {
	for _, f := range []string{"../../testdata/psi/home.mobile.json", "../../testdata/psi/home.desktop.json"} {
		body, _ := os.ReadFile(f)
		r, err := ExtractPSI(body)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(r.Explain)
		res, _ := json.Marshal(r)
		fmt.Println(f, "explain raw", len(raw), "result raw", len(res))
		for _, lvl := range []int{1, 2, 3, 4, 5, 6, 7, 9} {
			zw, _ := flate.NewWriter(nil, lvl)
			var buf bytes.Buffer
			n := 2000
			t0 := time.Now()
			for i := 0; i < n; i++ {
				buf.Reset()
				zw.Reset(&buf)
				zw.Write(raw)
				zw.Close()
			}
			fmt.Println(" level", lvl, "size", buf.Len(), "us", time.Since(t0).Microseconds()/int64(n))
		}
	}
}
