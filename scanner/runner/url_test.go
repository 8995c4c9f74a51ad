package runner

import "testing"

// A runner sends its token and reports over https only; plain http only to a loopback address.
func TestCheckServiceURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://sitepulse.example.com", true},
		{"https://sitepulse.example.com/", true},
		{"http://127.0.0.1:31500", true},
		{"http://localhost:8080", true},
		{"http://[::1]:8080", true},
		{"http://sitepulse.example.com", false},
		{"http://10.0.0.5:8080", false},
		{"http://127.0.0.1.nip.io", false},
		{"ftp://sitepulse.example.com", false},
		{"https://user:pass@sitepulse.example.com", false},
		{"https://sitepulse.example.com?x=1", false},
		{"sitepulse.example.com", false},
		{"", false},
	} {
		_, err := CheckServiceURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckServiceURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}
