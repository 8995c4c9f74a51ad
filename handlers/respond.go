package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sitepulse/oauth"
	"strings"
)

// maxBody caps every request body.
const maxBody = 1 << 20

// writeError writes the REST error shape {error: message}.
func writeError(w http.ResponseWriter, status int, message string) {
	oauth.WriteJSON(w, status, map[string]string{"error": message})
}

// validationError is the REST 422 shape {error: {formErrors, fieldErrors}}.
type validationError struct {
	FormErrors  []string            `json:"formErrors"`
	FieldErrors map[string][]string `json:"fieldErrors"`
}

// writeValidation writes a 422 with one message per field.
func writeValidation(w http.ResponseWriter, fieldErrors map[string][]string, formErrors ...string) {
	if formErrors == nil {
		formErrors = []string{}
	}
	oauth.WriteJSON(w, http.StatusUnprocessableEntity, map[string]validationError{
		"error": {FormErrors: formErrors, FieldErrors: fieldErrors},
	})
}

// errNotJSON and errTooLarge are decodeJSON's failures; writeDecodeError maps them to 400 and 413.
var (
	errNotJSON  = errors.New("request body must be a JSON object")
	errTooLarge = errors.New("request body is larger than 1 MiB")
)

// readAll is io.ReadAll starting from the size the request declares (Content-Length, at most
// 64 KiB; the body may still be longer, up to the server's cap, and is read whole): a budget
// check or an MCP call of a hundred bytes then allocates a hundred, not io.ReadAll's 512.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	size := int64(512)
	if declared >= 0 && declared < 64<<10 {
		size = declared + 1 // one more, so that the read that meets the end needs no growth
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// readRequestBody reads the whole request body: errTooLarge when it passes the server's 1 MiB cap,
// another error when it could not be read.
func readRequestBody(r *http.Request) ([]byte, error) {
	body, err := readAll(r.Body, r.ContentLength)
	if err == nil {
		return body, nil
	}
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, errTooLarge
	}
	return body, err
}

// decodeJSON reads a JSON object body into v.
func decodeJSON(r *http.Request, v any) error {
	body, err := readRequestBody(r)
	if errors.Is(err, errTooLarge) {
		return errTooLarge
	}
	if err != nil {
		return errNotJSON
	}
	if !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return errNotJSON
	}
	if err := json.Unmarshal(body, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return typeErr
		}
		return errNotJSON
	}
	return nil
}

// writeDecodeError answers a decodeJSON failure.
func writeDecodeError(w http.ResponseWriter, err error) {
	if errors.Is(err, errTooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, errTooLarge.Error())
		return
	}
	writeError(w, http.StatusBadRequest, errNotJSON.Error())
}

// isAPI answers whether a path speaks JSON rather than HTML.
func isAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/.well-known/") || path == "/healthz"
}
