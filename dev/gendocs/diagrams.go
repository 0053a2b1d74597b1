package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/clouds"
	"github.com/egress-proxies/egress/internal/provider/plugin"
)

// cloudsByReadiness are the production clouds (clouds.All) split by how
// Reconcile learns of their VMs: the types whose VMs call home, the types
// read through the proxy port, and each group's cloud names.
func cloudsByReadiness() (home, pulled, homeNames, pulledNames []string) {
	for _, c := range clouds.All {
		if c.Readiness == plugin.CallsHome {
			home, homeNames = append(home, c.Type), append(homeNames, c.Name)
		} else {
			pulled, pulledNames = append(pulled, c.Type), append(pulledNames, c.Name)
		}
	}
	return home, pulled, homeNames, pulledNames
}

// or joins names as a sentence does: "a", "a or b", "a, b or c".
func or(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// cloudNames is the FAQ's list of the clouds the proxies run on: each
// plugin's Name, in clouds.All's order.
func cloudNames(string) (string, error) {
	return and(namesOf(func(plugin.Plugin) bool { return true })) + ".", nil
}

// inPlaceClouds is the FAQ's answer of which clouds change a running
// proxy without a new VM: those whose plugin says InPlace, and the others.
func inPlaceClouds(string) (string, error) {
	yes := namesOf(func(c plugin.Plugin) bool { return c.InPlace })
	no := namesOf(func(c plugin.Plugin) bool { return !c.InPlace })
	return fmt.Sprintf("In place: %s. With a new VM: %s.", orNone(yes), orNone(no)), nil
}

// tokenClouds is the FAQ's list of the clouds that take an API token:
// those whose Terraform makes a secret for the deployment to fill.
func tokenClouds(string) (string, error) {
	return orNone(namesOf(func(c plugin.Plugin) bool { return len(c.Terraform.Secrets) > 0 })) + ".", nil
}

// namesOf are the Names of the clouds of clouds.All that has says, in its
// order.
func namesOf(has func(plugin.Plugin) bool) []string {
	var names []string
	for _, c := range clouds.All {
		if has(c) {
			names = append(names, c.Name)
		}
	}
	return names
}

// and is names as a list in prose: "a, b and c".
func and(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// orNone is and(names), or "none" for no name.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return and(names)
}

// providerTypes are every type the deployed functions serve, then the
// local stack's mock.
func providerTypes() []string {
	var types []string
	for _, c := range clouds.All {
		types = append(types, c.Type)
	}
	return append(types, app.MockType)
}

// eventFlowDiagram is the event flow page's diagram, its provider names
// and the two ways a VM is heard from taken from clouds.All.
func eventFlowDiagram(string) (string, error) {
	home, pulled, _, _ := cloudsByReadiness()
	return fmt.Sprintf("```mermaid\n"+`flowchart TB
  user([user, egress CLI]) -- "HTTPS + ID token" --> api[ProxyAPI]
  api -- "writes" --> docs[("Firestore<br/>namespaces/{namespace}/proxies/{proxy}<br/>pools/{pool}<br/>pools/{pool}/proxies/{proxy}")]
  docs -- "document written<br/>(3 Eventarc triggers)" --> rec[Reconcile]
  rec -- "status, claims, members" --> docs
  rec -- "Create, Get, Delete, Reconfigure" --> prov[provider: %s]
  prov --> vm[proxy VM:<br/>startup script or cloud-init, agent, engine]
  vm -- "reads the engine object<br/>(the deployment's bucket)" --> bucket[(bucket)]
  vm -- "call-home (%s, and the local mock)" --> callhome{{proxy-callhome}}
  callhome -- "push subscription" --> rec
  rec -- "hand-on, refill, member changed" --> requeue{{proxy-reconcile}}
  requeue -- "push subscription" --> rec
  sched[Cloud Scheduler] --> gctopic{{proxy-gc}}
  gctopic -- "Eventarc" --> gc[CollectGarbage]
  gc -- "ListByTag, Delete orphans" --> prov
  gc -- "sweep: re-drive stalled documents, every pool;<br/>access-pull: %s VMs" --> requeue
  rec -. "readiness, access lines after a cursor<br/>(%s: the proxy port)" .-> vm
  callhome -. "10 failed deliveries" .-> dead{{proxy-dead-letter}}
  requeue -. "10 failed deliveries" .-> dead
  client([a client]) -. "CONNECT with the proxy's credentials" .-> vm
`+"```\n", strings.Join(providerTypes(), ", "), strings.Join(home, ", "), strings.Join(pulled, ", "), strings.Join(pulled, ", ")), nil
}

// readmeDiagram is the README's diagram of a request: which VMs call
// home and which Reconcile reads through the proxy port, from
// clouds.All.
func readmeDiagram(string) (string, error) {
	_, _, homeNames, pulledNames := cloudsByReadiness()
	return fmt.Sprintf("```mermaid\n"+`flowchart LR
  client([client or egress CLI]) -- "POST /v1/namespaces/{ns}/proxies" --> api[ProxyAPI]
  api -- "the document, phase Pending" --> fs[(Firestore<br/>namespaces/ns/proxies/name)]
  fs -- "document written (Eventarc)" --> rec[Reconcile]
  rec -- "Create, Get, Delete" --> prov[provider: %s]
  prov --> home[proxy VM on %s]
  prov --> pulled[proxy VM on %s]
  home -- "ready: call-home on proxy-callhome" --> rec
  rec -- "ready? read through the proxy port" --> pulled
  rec -- "status: Ready, endpoint" --> fs
  sched[Cloud Scheduler] -- "proxy-gc" --> gc[CollectGarbage]
  gc -- "delete VMs no document claims" --> prov
  client -. "CONNECT through ip:port" .-> home
  client -. "CONNECT through ip:port" .-> pulled
`+"```\n", or(providerTypes()), or(homeNames), or(pulledNames)), nil
}

// cliClouds is what the CLI's help says of each production cloud, as
// JSON: the CLI links no cloud's package, so make docs copies the
// plugins' placement words into it (cmd/egress/clouds.go).
func cliClouds(string) (string, error) {
	type cloud struct {
		Type, Name                             string
		Region, Zone                           string
		MachineType, DefaultMachineType, Image string
		Regions                                []string
		Example                                string
		InPlace                                bool
	}
	var out []cloud
	for _, c := range clouds.All {
		p := c.Placement
		out = append(out, cloud{Type: c.Type, Name: c.Name, Region: p.Region, Zone: p.Zone, MachineType: p.MachineType,
			DefaultMachineType: p.DefaultMachineType, Image: p.Image, Regions: p.Regions, Example: p.Example, InPlace: c.InPlace})
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return "", err
	}
	b := buf.String()
	if strings.Contains(b, "`") {
		return "", fmt.Errorf("a cloud's placement words hold a backquote, which the CLI's raw string cannot")
	}
	return b, nil
}
