package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// openAPIFile is the API's description, whose words of the placement and the
// provider are the clouds' plugins' (their Placement and Images).
const openAPIFile = "internal/httpapi/openapi.json"

// apiDescription is the description of one property of a schema of
// openAPIFile that the clouds' plugins write.
type apiDescription struct {
	schema, property string
	render           func(cl []plugin.Plugin) string
}

// onEach is "on TYPE WORDS" for each cloud, joined with semicolons.
func onEach(cl []plugin.Plugin, words func(plugin.Plugin) string) string {
	var parts []string
	for _, c := range cl {
		parts = append(parts, "on "+c.Type+" "+words(c))
	}
	return strings.Join(parts, "; ")
}

// defaults is "TYPE: DEFAULT" for each cloud, comma-separated.
func defaults(cl []plugin.Plugin, of func(plugin.Plugin) string) string {
	var parts []string
	for _, c := range cl {
		parts = append(parts, c.Type+": "+of(c))
	}
	return strings.Join(parts, ", ")
}

// apiDescriptions are the descriptions the clouds write, in the order of
// the document.
var apiDescriptions = []apiDescription{
	{"Placement", "region", func(cl []plugin.Plugin) string {
		return "the region the traffic leaves from, in the provider's words: " + onEach(cl, func(c plugin.Plugin) string { return c.Placement.Region })
	}},
	{"Placement", "zone", func(cl []plugin.Plugin) string {
		return "a zone of the region (" + onEach(cl, func(c plugin.Plugin) string { return c.Placement.Zone }) +
			"); without it the provider chooses one (the same for every retry) and moves to another of the region when one is out of capacity"
	}},
	{"Placement", "machineType", func(cl []plugin.Plugin) string {
		return "the VM's machine type (" + onEach(cl, func(c plugin.Plugin) string { return c.Placement.MachineType }) +
			"); default the provider's (" + defaults(cl, func(c plugin.Plugin) string { return c.Placement.DefaultMachineType }) + ")"
	}},
	{"Placement", "image", func(cl []plugin.Plugin) string {
		return "the VM's image (" + onEach(cl, func(c plugin.Plugin) string { return c.Placement.Image }) +
			"); default the provider's (" + defaults(cl, func(c plugin.Plugin) string { return c.Images.Default }) + ")"
	}},
	{"Spec", "provider", func(cl []plugin.Plugin) string {
		var types []string
		for _, c := range cl {
			types = append(types, c.Type)
		}
		return "the cloud provider (" + strings.Join(types, ", ") + "; mock where the deployment links it, as the local stack does); default the deployment's DEFAULT_PROVIDER"
	}},
}

// apiWithClouds is the API's description text with the descriptions of
// apiDescriptions written from cl, each in place: the rest of the
// document, and its layout, are as they were.
func apiWithClouds(doc string, cl []plugin.Plugin) (string, error) {
	for _, d := range apiDescriptions {
		schema := strings.Index(doc, "\n      \""+d.schema+"\": {")
		if schema < 0 {
			return "", fmt.Errorf("%s: no schema %s", openAPIFile, d.schema)
		}
		prop := strings.Index(doc[schema:], "\n          \""+d.property+"\": {")
		if prop < 0 {
			return "", fmt.Errorf("%s: schema %s has no property %s", openAPIFile, d.schema, d.property)
		}
		const key = `"description": "`
		desc := strings.Index(doc[schema+prop:], key)
		if desc < 0 {
			return "", fmt.Errorf("%s: %s.%s has no description", openAPIFile, d.schema, d.property)
		}
		start := schema + prop + desc + len(key) - 1 // at the opening quote
		var old string
		dec := json.NewDecoder(strings.NewReader(doc[start:]))
		if err := dec.Decode(&old); err != nil {
			return "", fmt.Errorf("%s: %s.%s's description: %w", openAPIFile, d.schema, d.property, err)
		}
		end := start + int(dec.InputOffset())
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d.render(cl)); err != nil {
			return "", err
		}
		doc = doc[:start] + strings.TrimSuffix(b.String(), "\n") + doc[end:]
	}
	return doc, nil
}

// writeAPIClouds writes the clouds' descriptions into the API's
// description; it reports whether the file changed.
func writeAPIClouds(root string) (bool, error) {
	path := filepath.Join(root, openAPIFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	next, err := apiWithClouds(string(raw), clouds.All)
	if err != nil || next == string(raw) {
		return false, err
	}
	return true, os.WriteFile(path, []byte(next), 0o644)
}
