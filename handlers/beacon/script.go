// Package beacon is SitePulse's first-party real-user beacon (docs/field.md "The beacon"): the
// script sites add (Google's web-vitals attribution build, pinned and embedded, plus the few
// lines that send what it measures), the strict parser of what it sends, and the ingest that
// limits, samples and aggregates it into the store's histograms.
package beacon

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// WebVitalsVersion is the web-vitals release embedded (npm web-vitals@5.3.0, its
// dist/web-vitals.attribution.iife.js, Apache-2.0, LICENSE beside it). WebVitalsSHA256 is that
// file's sha256, checked by a test so that a change to it is a deliberate one.
const (
	WebVitalsVersion = "5.3.0"
	WebVitalsSHA256  = "6f15b35f15dccbe05c8173474fc5d634099069bac80048b193404dc91329f6f6"
)

//go:embed webvitals/web-vitals.attribution.iife.js
var webVitals []byte

//go:embed sitepulse.js
var sender []byte

// Script is the beacon script served at /beacon/v1.js: web-vitals and the sender in one
// function, so neither leaves a global behind. Plain and Gzip are its bytes, ETag its quoted
// hash, Integrity its Sub-Resource Integrity hash (sha384 of Plain: a browser checks the
// decoded bytes), what the platform registers it with. One script serves every site: the
// snippet's data-site attribute names the site.
var Script = build()

type script struct {
	Plain, Gzip []byte
	ETag        string
	Integrity   string
}

func build() script {
	var b bytes.Buffer
	b.WriteString("/*! SitePulse beacon; web-vitals " + WebVitalsVersion + " (c) Google LLC, Apache-2.0 */\n(function(){\n")
	b.Write(webVitals)
	b.WriteString("\n")
	// The sender without its comments and indentation: the file stays readable, the wire small.
	for _, line := range strings.Split(string(sender), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "//") {
			b.WriteString(line + "\n")
		}
	}
	b.WriteString("})();\n")
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(b.Bytes())
	w.Close()
	sum := sha256.Sum256(b.Bytes())
	sri := sha512.Sum384(b.Bytes())
	return script{Plain: b.Bytes(), Gzip: z.Bytes(), ETag: `"` + hex.EncodeToString(sum[:8]) + `"`,
		Integrity: "sha384-" + base64.StdEncoding.EncodeToString(sri[:])}
}
