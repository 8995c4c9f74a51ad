package storetest_test

import (
	"testing"

	"sitepulse/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }
