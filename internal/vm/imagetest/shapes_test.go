package imagetest_test

import "github.com/egress-proxies/egress/internal/vm/imagetest"

// The clouds' own shapes join TestImage's boots before any test runs.
// They are listed here, in the external test package, because each
// imports the image test's library (shape.go): the package's own tests
// cannot import them, and TestImage takes them from PluginShapes.
func init() {
	imagetest.PluginShapes = listed
}
