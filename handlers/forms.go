package handlers

import "net/http"

// formValues reads a repeated form field (checkboxes such as a channel's sites): each value
// once, in the order sent, empty ones dropped; ok is false when more than max distinct values
// came, which no form of ours sends. Handlers read it before any store read, so a form that
// repeats one value thousands of times costs what a form naming it once does.
func formValues(r *http.Request, key string, max int) (values []string, ok bool) {
	values = []string{}
	seen := map[string]bool{}
	for _, v := range r.PostForm[key] {
		if v == "" || seen[v] {
			continue
		}
		if len(values) == max {
			return nil, false
		}
		seen[v] = true
		values = append(values, v)
	}
	return values, true
}
