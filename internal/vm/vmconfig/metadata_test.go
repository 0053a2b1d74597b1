package vmconfig_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// TestRefusedGeneration: the generation an egress/error names, as the
// agent writes it; none for a reason about no configuration that loaded.
func TestRefusedGeneration(t *testing.T) {
	type read struct {
		Generation int64
		Named      bool
	}
	for reason, want := range map[string]read{
		"generation 7: the self-test failed; the configuration served before is served still": {7, true},
		"generation 0: the rendered nftables rules do not load":                               {0, true},
		"engine: reading the configuration: json: unknown field \"x\"":                        {},
		"the proxy engine did not start":                                                      {},
		"generation x: nonsense":                                                              {},
		"the generation 7: not at the start":                                                  {},
		"generation 99999999999999999999: too large":                                          {},
	} {
		g, ok := vmconfig.RefusedGeneration(reason)
		if diff := cmp.Diff(want, read{g, ok}); diff != "" {
			t.Errorf("RefusedGeneration(%q) (-want +got):\n%s", reason, diff)
		}
	}
}

// TestParseFollow: the setting egress-follow reads back as Follow wrote
// it; a setting that lacks the name or the URL, or whose name could not
// be a part's, is refused, naming the setting.
func TestParseFollow(t *testing.T) {
	type read struct {
		Name, URL string
		Refused   bool
	}
	for setting, want := range map[string]read{
		vmconfig.Follow("some-cloud", "http://169.254.169.254/metadata/v1.json"): {"some-cloud", "http://169.254.169.254/metadata/v1.json", false},
		"some-cloud https://example.com/m\n":                                     {"some-cloud", "https://example.com/m", false},
		"some-cloud":                                                             {Refused: true},
		"http://169.254.169.254/metadata/v1.json":                                {Refused: true},
		"Some_Cloud http://example.com/m":                                        {Refused: true},
		"some-cloud ftp://example.com/m":                                         {Refused: true},
		"some-cloud http://example.com/m http://example.com/n":                   {Refused: true},
		"": {Refused: true},
	} {
		name, url, err := vmconfig.ParseFollow(setting)
		if err != nil && !strings.Contains(err.Error(), vmconfig.KeyFollow) {
			t.Errorf("ParseFollow(%q): %v, which does not name the setting %s", setting, err, vmconfig.KeyFollow)
		}
		if diff := cmp.Diff(want, read{name, url, err != nil}); diff != "" {
			t.Errorf("ParseFollow(%q) (-want +got):\n%s", setting, diff)
		}
	}
}
