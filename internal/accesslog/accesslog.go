// Package accesslog writes the proxies' access lines (internal/callhome)
// where operators read them: in production, Cloud Logging's log
// egress-proxy-access of the project, one entry per line, on the VM's
// monitored resource (gce_instance; a generic_node for a VM of another
// cloud), labelled with the proxy's uid, namespace and name; locally, the
// local stack's own log.
//
// Reconcile writes them through the Logging API (entries.write), with its
// own account: the VMs hold no log writer (docs/concepts/security.md).
// The log is not the functions' standard output, so no line a VM sends
// can feed a log-based metric or an alert, which read only that.
package accesslog

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	logging "google.golang.org/api/logging/v2"
	"google.golang.org/api/option"

	"github.com/egress-proxies/egress/internal/callhome"
	"github.com/egress-proxies/egress/internal/vm/vmconfig"
)

// LogID is the log the lines go to.
const LogID = "egress-proxy-access"

// CloudLogging writes to Cloud Logging. It makes its client on the first
// write, as the app's other clients do, and tries again after a failure.
type CloudLogging struct {
	project string
	opts    []option.ClientOption

	mu  sync.Mutex
	svc *logging.Service
}

// NewCloudLogging returns the sink of project's log LogID; opts reach the
// Logging API's client (an endpoint, in tests).
func NewCloudLogging(project string, opts ...option.ClientOption) *CloudLogging {
	return &CloudLogging{project: project, opts: opts}
}

func (c *CloudLogging) service(ctx context.Context) (*logging.Service, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.svc == nil {
		svc, err := logging.NewService(context.WithoutCancel(ctx), c.opts...)
		if err != nil {
			return nil, fmt.Errorf("cloud logging client: %w", err)
		}
		c.svc = svc
	}
	return c.svc, nil
}

// Write writes the lines in one entries.write.
func (c *CloudLogging) Write(ctx context.Context, l callhome.Labels, lines []vmconfig.AccessLine) error {
	svc, err := c.service(ctx)
	if err != nil {
		return err
	}
	req := &logging.WriteLogEntriesRequest{
		LogName:  "projects/" + c.project + "/logs/" + LogID,
		Resource: c.resource(l),
		Labels:   labels(l),
	}
	for _, line := range lines {
		payload, err := json.Marshal(line)
		if err != nil {
			return err
		}
		req.Entries = append(req.Entries, &logging.LogEntry{
			JsonPayload: payload,
			Timestamp:   line.Time.UTC().Format(time.RFC3339Nano),
			Severity:    "INFO",
		})
	}
	if _, err := svc.Entries.Write(req).Context(ctx).Do(); err != nil {
		return fmt.Errorf("writing %d access lines of %s/%s to %s: %w", len(lines), l.Namespace, l.Name, LogID, err)
	}
	return nil
}

// resource is the monitored resource the lines are written on: a GCE
// VM's gce_instance; for a VM of another cloud, read by pull, a
// generic_node of the project, in the VM's location, in the namespace of
// its provider type, named by its providerID.
func (c *CloudLogging) resource(l callhome.Labels) *logging.MonitoredResource {
	if l.Provider == "" {
		return &logging.MonitoredResource{Type: "gce_instance", Labels: map[string]string{
			"project_id": l.Instance.Project, "zone": l.Instance.Zone, "instance_id": l.Instance.ID,
		}}
	}
	return &logging.MonitoredResource{Type: "generic_node", Labels: map[string]string{
		"project_id": c.project, "location": cmp.Or(l.Instance.Zone, "global"), "namespace": l.Provider, "node_id": l.Instance.ID,
	}}
}

func labels(l callhome.Labels) map[string]string {
	return map[string]string{"uid": l.UID, "namespace": l.Namespace, "name": l.Name, "instance": l.Instance.Name}
}

// Local writes each line to a logger, as the local stack's own log: one
// line "proxy access" with the labels and the line's fields, each an
// attribute of its group (labels.uid, line.host, in the text format).
type Local struct{ Log *slog.Logger }

// Write logs the lines.
func (s Local) Write(ctx context.Context, l callhome.Labels, lines []vmconfig.AccessLine) error {
	m := labels(l)
	var ls []any
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ls = append(ls, slog.String(k, m[k]))
	}
	for _, line := range lines {
		s.Log.InfoContext(ctx, "proxy access", slog.String("log", LogID), slog.Group("labels", ls...), slog.Group("line",
			slog.Time("time", line.Time), slog.String("source", line.Source), slog.String("user", line.User),
			slog.String("session", line.Session), slog.String("sourceAddress", line.SourceAddress),
			slog.String("protocol", line.Protocol), slog.String("method", line.Method), slog.String("host", line.Host),
			slog.Int("port", line.Port), slog.Int("status", line.Status), slog.Int64("bytesIn", line.BytesIn),
			slog.Int64("bytesOut", line.BytesOut), slog.Int64("durationMs", line.DurationMs), slog.String("reason", line.Reason)))
	}
	return nil
}
