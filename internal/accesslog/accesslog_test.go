package accesslog_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/accesslog"
	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
	"github.com/egress-proxies/egress/internal/vmidentity"
)

// TestCloudLoggingWrite: the real Logging API client, against an httptest
// stand-in of entries.write, sends one request per batch to the log
// egress-proxy-access, on the VM's gce_instance, labelled with the proxy,
// one entry per line at the line's time.
func TestCloudLoggingWrite(t *testing.T) {
	var got struct {
		Path string
		Body struct {
			LogName  string
			Resource struct {
				Type   string
				Labels map[string]string
			}
			Labels  map[string]string
			Entries []struct {
				Timestamp   string
				Severity    string
				JSONPayload map[string]any `json:"jsonPayload"`
			}
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Path = r.Method + " " + r.URL.Path
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got.Body); err != nil {
			t.Errorf("entries.write body: %v", err)
		}
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	sink := accesslog.NewCloudLogging("demo-project", option.WithEndpoint(srv.URL), option.WithoutAuthentication())
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	l := callhome.Labels{UID: "u-1", Namespace: "team-a", Name: "web",
		Instance: vmidentity.Instance{Project: "demo-project", Zone: "us-central1-a", Name: "proxy-u-1", ID: "42"}}
	if err := sink.Write(context.Background(), l, []vmconfig.AccessLine{
		{Time: at, Source: "203.0.113.7:50000", User: "u1", Protocol: vmconfig.ProtocolConnect, Method: "CONNECT", Host: "api.example.com", Port: 443, Status: 200},
		{Time: at.Add(time.Second), Source: "203.0.113.7:50001", Protocol: vmconfig.ProtocolHTTP, Method: "GET", Host: "example.org", Port: 80, Status: 403, Reason: "port"},
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("POST /v2/entries:write", got.Path); diff != "" {
		t.Errorf("the call (-want +got):\n%s", diff)
	}
	b := got.Body
	if b.LogName != "projects/demo-project/logs/egress-proxy-access" || b.Resource.Type != "gce_instance" ||
		!cmp.Equal(map[string]string{"project_id": "demo-project", "zone": "us-central1-a", "instance_id": "42"}, b.Resource.Labels) ||
		!cmp.Equal(map[string]string{"uid": "u-1", "namespace": "team-a", "name": "web", "instance": "proxy-u-1"}, b.Labels) {
		t.Errorf("the request's log, resource and labels: %+v", b)
	}
	if len(b.Entries) != 2 || b.Entries[0].Timestamp != "2026-12-03T10:00:00Z" || b.Entries[0].JSONPayload["host"] != "api.example.com" || b.Entries[1].JSONPayload["reason"] != "port" {
		t.Errorf("the entries: %+v", b.Entries)
	}
}

// TestCloudLoggingWriteOfAVMReadByPull: the lines of a VM of another
// cloud (hetzner's, read by pull) go to the same log under the same
// labels, on a generic_node of the project in its location, named by its
// providerID, since it is no gce_instance.
func TestCloudLoggingWriteOfAVMReadByPull(t *testing.T) {
	var got struct {
		Resource struct {
			Type   string
			Labels map[string]string
		}
		LogName string
		Labels  map[string]string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("entries.write body: %v", err)
		}
		io.WriteString(w, "{}")
	}))
	defer srv.Close()
	sink := accesslog.NewCloudLogging("demo-project", option.WithEndpoint(srv.URL), option.WithoutAuthentication())
	l := callhome.Labels{UID: "u-1", Namespace: "team-a", Name: "web", Provider: "hetzner",
		Instance: vmidentity.Instance{Zone: "fsn1", Name: "hcloud://1001", ID: "hcloud://1001"}}
	if err := sink.Write(context.Background(), l, []vmconfig.AccessLine{
		{Time: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC), Protocol: vmconfig.ProtocolConnect, Method: "CONNECT", Host: "api.example.com", Port: 443, Status: 200},
	}); err != nil {
		t.Fatal(err)
	}
	type written struct {
		Resource, LogName string
		ResourceLabels    map[string]string
		Labels            map[string]string
	}
	want := written{Resource: "generic_node", LogName: "projects/demo-project/logs/egress-proxy-access",
		ResourceLabels: map[string]string{"project_id": "demo-project", "location": "fsn1", "namespace": "hetzner", "node_id": "hcloud://1001"},
		Labels:         map[string]string{"uid": "u-1", "namespace": "team-a", "name": "web", "instance": "hcloud://1001"}}
	if diff := cmp.Diff(want, written{got.Resource.Type, got.LogName, got.Resource.Labels, got.Labels}); diff != "" {
		t.Errorf("the request's resource, log and labels (-want +got):\n%s", diff)
	}
}
