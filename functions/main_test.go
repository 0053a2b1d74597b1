package functions

import (
	"os"
	"testing"

	"github.com/egress-proxies/egress/internal/emulatortest"
)

func TestMain(m *testing.M) {
	// The process runtime is built once per binary, by whichever test
	// serves a function first; these are its settings for every test.
	os.Setenv("MOCK_PROVISIONING_DELAY", "1s")
	emulatortest.Main(m)
}
