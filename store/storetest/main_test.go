package storetest

import "testing"

// TestFirstOfRunOnce: the skip notice is said by one package of a go test run, not by each.
func TestFirstOfRunOnce(t *testing.T) {
	firstOfRun() // another package of this run may have been first
	if firstOfRun() {
		t.Error("firstOfRun answered true twice for one go command")
	}
}
