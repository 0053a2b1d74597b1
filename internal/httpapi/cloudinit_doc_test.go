package httpapi_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestCloudInitSaysWhoReadsIt: a custom cloud-init, inline or from a
// secret, goes into the VM's user-data metadata in clear, which anyone who
// may read the instance (compute.instances.get, in a project Viewer's
// role) reads. The API's description of both fields says so, where a
// tenant reads it before putting a secret there.
func TestCloudInitSaysWhoReadsIt(t *testing.T) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	found := 0
	for name, s := range doc.Components.Schemas {
		for _, field := range []string{"cloudInit", "cloudInitSecret"} {
			p, ok := s.Properties[field]
			if !ok {
				continue
			}
			found++
			if !strings.Contains(p.Description, "compute.instances.get") || !strings.Contains(p.Description, "Viewer") {
				t.Errorf("%s.%s's description %q does not say that whoever may read the instance (compute.instances.get, a project Viewer) reads it", name, field, p.Description)
			}
		}
	}
	if found < 2 {
		t.Fatalf("found %d of the cloud-init fields in openapi.json's schemas", found)
	}
}
