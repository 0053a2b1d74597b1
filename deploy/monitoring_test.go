package deploy_test

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"cloud.google.com/go/monitoring/dashboard/apiv1/dashboardpb"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egress-proxies/egress/internal/app"
	"github.com/egress-proxies/egress/internal/budgetalert"
	"github.com/egress-proxies/egress/internal/metering"
	"github.com/egress-proxies/egress/internal/provider"
)

// userMetricPrefix is how Cloud Monitoring names a log-based metric.
const userMetricPrefix = "logging.googleapis.com/user/"

// platformMetrics are the metrics Google Cloud itself writes that the
// dashboard and the alerts may use, with the monitored resource type each
// is written for.
var platformMetrics = map[string]string{
	"pubsub.googleapis.com/subscription/num_undelivered_messages":  "pubsub_subscription",
	"compute.googleapis.com/instance/network/sent_bytes_count":     "gce_instance",
	"compute.googleapis.com/instance/network/received_bytes_count": "gce_instance",
}

var (
	messageClause = regexp.MustCompile(`jsonPayload\.message="([^"]*)"`)
	extractField  = regexp.MustCompile(`^EXTRACT\(jsonPayload\.([A-Za-z0-9_]+)(\.[A-Za-z0-9_.]+)?\)$`)
	metricType    = regexp.MustCompile(`metric\.type="([^"]*)"`)
	metricLabel   = regexp.MustCompile(`metric\.labels?\.([A-Za-z0-9_]+)(="([^"]*)")?`)
	resourceLabel = regexp.MustCompile(`resource\.labels?\.([A-Za-z0-9_]+)="([^"]*)"`)
	resourceType  = regexp.MustCompile(`resource\.type="([^"]*)"`)
	userLabel     = regexp.MustCompile(`metadata\.user_labels\."([^"]*)"(="([^"]*)")?`)
)

// logMetric is a log-based metric as Terraform defines it.
type logMetric struct {
	address string
	labels  []string
}

// logMetrics are the module's log-based metrics by metric type.
func logMetrics(t *testing.T, e *evaluation) map[string]logMetric {
	t.Helper()
	out := map[string]logMetric{}
	for _, i := range e.of("google_logging_metric") {
		var labels []string
		for _, d := range nested(i.block.Body, "metric_descriptor") {
			for _, l := range nested(d.Body, "labels") {
				labels = append(labels, i.str(t, l.Body, "key"))
			}
		}
		sort.Strings(labels)
		out[userMetricPrefix+i.str(t, i.block.Body, "name")] = logMetric{address: i.address(), labels: labels}
	}
	return out
}

// TestLogMetricsReadLinesTheCodeLogs: every log-based metric selects, by
// its filter, one message the code really logs, from the functions' logs
// only, and extracts only fields that line carries, into the labels it
// declares. A message or a field renamed in the code alone fails here,
// where in production the metric would silently stay at zero.
func TestLogMetricsReadLinesTheCodeLogs(t *testing.T) {
	m := parseModule(t)
	e := evaluate(t, m, nil)
	lines := loggedLines(t, "../internal")
	functionLogs := e.local(t, "function_logs").AsString()
	metrics := e.of("google_logging_metric")
	if len(metrics) == 0 {
		t.Fatal("no google_logging_metric evaluates")
	}
	for _, i := range metrics {
		filter := i.str(t, i.block.Body, "filter")
		if !strings.HasPrefix(filter, functionLogs+" AND ") {
			t.Errorf("%s: filter %q does not start with local.function_logs: it would count other services' lines", i.address(), filter)
		}
		msgs := messageClause.FindAllStringSubmatch(filter, -1)
		if len(msgs) != 1 {
			t.Errorf("%s: filter %q selects %d messages, want exactly one", i.address(), filter, len(msgs))
			continue
		}
		msg := msgs[0][1]
		fields, ok := lines[msg]
		if !ok {
			t.Errorf("%s: filter selects message %q, which nothing under internal/ logs", i.address(), msg)
			continue
		}
		extractors := map[string]string{}
		if v, ok := i.attr(t, i.block.Body, "label_extractors"); ok {
			extractors = stringMap(t, i.address()+".label_extractors", v)
		}
		var declared, extracted []string
		for _, d := range nested(i.block.Body, "metric_descriptor") {
			for _, l := range nested(d.Body, "labels") {
				declared = append(declared, i.str(t, l.Body, "key"))
			}
		}
		for k := range extractors {
			extracted = append(extracted, k)
		}
		sort.Strings(declared)
		sort.Strings(extracted)
		if diff := cmp.Diff(declared, extracted); diff != "" {
			t.Errorf("%s: labels (-metric_descriptor +label_extractors):\n%s", i.address(), diff)
		}
		if v := i.str(t, i.block.Body, "value_extractor"); v != "" {
			extractors["value_extractor"] = v
		}
		for what, x := range extractors {
			f := extractField.FindStringSubmatch(x)
			if f == nil {
				t.Errorf("%s: %s %q is not EXTRACT(jsonPayload.FIELD)", i.address(), what, x)
				continue
			}
			if !slices.Contains(fields, f[1]) {
				t.Errorf("%s: %s reads jsonPayload.%s, which the %q line does not carry (it has %v)", i.address(), what, f[1], msg, fields)
			}
		}
	}
}

// metricUse is one place a chart or an alert reads a metric.
type metricUse struct {
	where   string
	filter  string
	groupBy []string
}

// dashboardUses parses the dashboard and returns what each of its charts
// reads. A widget the test cannot read the metrics of fails it, so that no
// chart escapes the check by being of another kind.
func dashboardUses(t *testing.T, e *evaluation) (*dashboardpb.Dashboard, []metricUse) {
	t.Helper()
	d := &dashboardpb.Dashboard{}
	i := e.one(t, "google_monitoring_dashboard", "egress")
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal([]byte(i.str(t, i.block.Body, "dashboard_json")), d); err != nil {
		t.Fatalf("%s: dashboard_json is not a Monitoring Dashboard: %v", i.address(), err)
	}
	var uses []metricUse
	for n, tile := range d.GetMosaicLayout().GetTiles() {
		w := tile.GetWidget()
		where := fmt.Sprintf("dashboard tile %d (%q)", n, w.GetTitle())
		switch {
		case w.GetText() != nil:
		case w.GetXyChart() != nil:
			for k, ds := range w.GetXyChart().GetDataSets() {
				f := ds.GetTimeSeriesQuery().GetTimeSeriesFilter()
				if f == nil {
					t.Errorf("%s, data set %d: not a timeSeriesFilter, whose metric this test could not check", where, k)
					continue
				}
				uses = append(uses, metricUse{where: fmt.Sprintf("%s, data set %d", where, k), filter: f.GetFilter(), groupBy: f.GetAggregation().GetGroupByFields()})
			}
		default:
			t.Errorf("%s: a widget of a kind whose metrics this test does not read", where)
		}
	}
	return d, uses
}

// alertUses returns what each alert condition reads.
func alertUses(t *testing.T, e *evaluation) []metricUse {
	t.Helper()
	var uses []metricUse
	for _, i := range e.of("google_monitoring_alert_policy") {
		for n, c := range nested(i.block.Body, "conditions") {
			where := fmt.Sprintf("%s condition %d (%q)", i.address(), n, i.str(t, c.Body, "display_name"))
			kinds := 0
			for _, kind := range []string{"condition_threshold", "condition_absent"} {
				for _, k := range nested(c.Body, kind) {
					kinds++
					var groupBy []string
					for _, a := range nested(k.Body, "aggregations") {
						if v, ok := i.attr(t, a.Body, "group_by_fields"); ok {
							groupBy = append(groupBy, stringList(t, where, v)...)
						}
					}
					uses = append(uses, metricUse{where: where, filter: i.str(t, k.Body, "filter"), groupBy: groupBy})
				}
			}
			if kinds != 1 || len(c.Body.Blocks) != 1 {
				t.Errorf("%s: not one condition_threshold or condition_absent, whose metric this test could not check", where)
			}
		}
	}
	return uses
}

// vmLabels are the labels every VM and address a provider makes carries
// (package provider's contract).
var vmLabels = []string{provider.LabelManaged, provider.LabelUID, provider.LabelDeployment}

// TestChartsAndAlertsUseDefinedMetrics: every metric a chart or an alert
// reads is a log-based metric of the module or a platform metric this test
// names, with only labels that metric has, and label values the code and
// the module really produce. A chart of a metric nobody writes shows "no
// data" forever, and an alert on it never fires; both look healthy.
func TestChartsAndAlertsUseDefinedMetrics(t *testing.T) {
	m := parseModule(t)
	e := evaluate(t, m, nil)
	defined := logMetrics(t, e)
	_, uses := dashboardUses(t, e)
	uses = append(uses, alertUses(t, e)...)

	// Label values the code defines: a filter on a function or an outcome
	// that no line carries selects nothing.
	var functions []string
	for _, f := range app.Functions {
		functions = append(functions, string(f))
	}
	var thresholds []string
	for _, t := range budgetalert.Thresholds {
		thresholds = append(thresholds, strconv.Itoa(t))
	}
	values := map[string][]string{
		"function":  functions,
		"outcome":   {metering.OK, metering.Failed, metering.Ignored},
		"threshold": thresholds,
	}
	var subscriptions []string
	for _, s := range e.of("google_pubsub_subscription") {
		subscriptions = append(subscriptions, s.str(t, s.block.Body, "name"))
	}

	for _, u := range uses {
		types := metricType.FindAllStringSubmatch(u.filter, -1)
		if len(types) != 1 {
			t.Errorf("%s: filter %q names %d metric types, want one", u.where, u.filter, len(types))
			continue
		}
		typ := types[0][1]
		var labels []string
		if lm, ok := defined[typ]; ok {
			labels = lm.labels
		} else if res, ok := platformMetrics[typ]; ok {
			if rt := resourceType.FindStringSubmatch(u.filter); rt == nil || rt[1] != res {
				t.Errorf("%s: %s is written for resource.type=%q; the filter %q does not say so", u.where, typ, res, u.filter)
			}
		} else {
			t.Errorf("%s: metric %s is neither defined in metrics.tf nor a platform metric this test names", u.where, typ)
			continue
		}
		refs := metricLabel.FindAllStringSubmatch(u.filter, -1)
		for _, g := range u.groupBy {
			refs = append(refs, metricLabel.FindAllStringSubmatch(g, -1)...)
		}
		for _, r := range refs {
			if !slices.Contains(labels, r[1]) {
				t.Errorf("%s: %s has no label %q (it has %v)", u.where, typ, r[1], labels)
			}
			if want, ok := values[r[1]]; ok && r[2] != "" && !slices.Contains(want, r[3]) {
				t.Errorf("%s: label %s=%q is a value no line carries (the code's are %v)", u.where, r[1], r[3], want)
			}
		}
		for _, r := range resourceLabel.FindAllStringSubmatch(u.filter, -1) {
			if r[1] == "subscription_id" && !slices.Contains(subscriptions, r[2]) {
				t.Errorf("%s: subscription %q is not one the module creates (%v)", u.where, r[2], subscriptions)
			}
		}
		// A VM's labels are the providers' to set: a chart of a label
		// no VM carries, or of another deployment's, is empty.
		users := userLabel.FindAllStringSubmatch(u.filter, -1)
		for _, g := range u.groupBy {
			users = append(users, userLabel.FindAllStringSubmatch(g, -1)...)
		}
		for _, r := range users {
			if !slices.Contains(vmLabels, r[1]) {
				t.Errorf("%s: VM label %q is none the providers set (%v)", u.where, r[1], vmLabels)
			}
			if r[1] == provider.LabelDeployment && r[2] != "" && r[3] != provider.DefaultDeployment {
				t.Errorf("%s: %s=%q is not the deployment's name (%s by default)", u.where, r[1], r[3], provider.DefaultDeployment)
			}
		}
	}
}

// TestDashboardIsAMonitoringDashboard: the dashboard_json Terraform sends
// parses as the Monitoring API's Dashboard, strictly (an unknown field or
// enum value is an error, as a misspelling would be), its tiles fit the
// grid without overlapping, and it charts what an operator needs.
func TestDashboardIsAMonitoringDashboard(t *testing.T) {
	m := parseModule(t)
	e := evaluate(t, m, nil)
	i := e.one(t, "google_monitoring_dashboard", "egress")
	sent := i.str(t, i.block.Body, "dashboard_json")

	// The strict parse itself must refuse a misspelling, or the check
	// below proves nothing.
	cases := map[string]struct {
		reason  string
		json    string
		wantErr bool
	}{
		"AsTerraformSendsIt": {
			reason: "The module's dashboard is a Dashboard.",
			json:   sent,
		},
		"MisspeltField": {
			reason:  "A field the API does not have is an error, not ignored.",
			json:    strings.Replace(sent, `"xyChart"`, `"xyCahrt"`, 1),
			wantErr: true,
		},
		"UnknownEnumValue": {
			reason:  "An aligner the API does not have is an error.",
			json:    strings.Replace(sent, `"ALIGN_DELTA"`, `"ALIGN_AVERAGE"`, 1),
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.wantErr && tc.json == sent {
				t.Fatalf("%s\nthe case changed nothing in the dashboard: its premise is gone", tc.reason)
			}
			err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal([]byte(tc.json), &dashboardpb.Dashboard{})
			if (err != nil) != tc.wantErr {
				t.Errorf("%s\nUnmarshal() error = %v, wantErr %v", tc.reason, err, tc.wantErr)
			}
		})
	}

	d, uses := dashboardUses(t, e)
	layout := d.GetMosaicLayout()
	if layout == nil {
		t.Fatal("the dashboard has no mosaicLayout")
	}
	if c := layout.GetColumns(); c < 1 || c > 12 {
		t.Errorf("mosaicLayout.columns = %d, want 1 to 12", c)
	}
	taken := map[[2]int32]string{}
	for n, tile := range layout.GetTiles() {
		title := tile.GetWidget().GetTitle()
		if title == "" {
			t.Errorf("tile %d has no title", n)
		}
		if tile.GetWidth() < 1 || tile.GetHeight() < 1 || tile.GetXPos() < 0 || tile.GetYPos() < 0 || tile.GetXPos()+tile.GetWidth() > layout.GetColumns() {
			t.Errorf("tile %q at (%d,%d) sized %dx%d does not fit %d columns", title, tile.GetXPos(), tile.GetYPos(), tile.GetWidth(), tile.GetHeight(), layout.GetColumns())
		}
		for x := tile.GetXPos(); x < tile.GetXPos()+tile.GetWidth(); x++ {
			for y := tile.GetYPos(); y < tile.GetYPos()+tile.GetHeight(); y++ {
				if other, ok := taken[[2]int32{x, y}]; ok {
					t.Errorf("tile %q overlaps tile %q at (%d,%d)", title, other, x, y)
				}
				taken[[2]int32{x, y}] = title
			}
		}
	}

	// What issues 20 and 47 ask the dashboard to chart, by metric.
	charted := map[string]bool{}
	for _, u := range uses {
		if typ := metricType.FindStringSubmatch(u.filter); typ != nil {
			charted[strings.TrimPrefix(typ[1], userMetricPrefix)] = true
		}
	}
	var missing []string
	for _, want := range []string{
		"egress/fleet",         // proxies by phase
		"egress/ready_latency", // ready latency
		"egress/invocations",   // invocations and errors by function
		"egress/gc_deleted",    // GC deletions
		"egress/gc_failed",     // and failures
		"pubsub.googleapis.com/subscription/num_undelivered_messages", // dead-lettered messages
		"compute.googleapis.com/instance/network/sent_bytes_count",    // each proxy's traffic
		"compute.googleapis.com/instance/network/received_bytes_count",
		"egress/namespace_cost_forecast",      // each namespace's month (issue 47)
		"egress/namespace_cost_month_to_date", // so far and forecast
	} {
		if !charted[want] {
			missing = append(missing, want)
		}
	}
	if diff := cmp.Diff([]string(nil), missing); diff != "" {
		t.Errorf("metrics the dashboard must chart and does not:\n%s", diff)
	}
}

// TestAlertPoliciesTellWhomAndWhat: every policy notifies the channels of
// var.notification_channels, says how severe it is, and carries markdown
// documentation an operator can act on.
func TestAlertPoliciesTellWhomAndWhat(t *testing.T) {
	m := parseModule(t)
	channels := []string{"projects/demo-project/notificationChannels/1", "projects/demo-project/notificationChannels/2"}
	e := evaluate(t, m, map[string]cty.Value{
		"notification_channels": cty.ListVal([]cty.Value{cty.StringVal(channels[0]), cty.StringVal(channels[1])}),
	})
	policies := e.of("google_monitoring_alert_policy")
	if len(policies) == 0 {
		t.Fatal("no alert policy")
	}
	for _, p := range policies {
		var got []string
		if v, ok := p.attr(t, p.block.Body, "notification_channels"); ok {
			got = stringList(t, p.address(), v)
		}
		if diff := cmp.Diff(channels, got); diff != "" {
			t.Errorf("%s: notification channels (-var.notification_channels +policy):\n%s", p.address(), diff)
		}
		if s := p.str(t, p.block.Body, "severity"); !slices.Contains([]string{"CRITICAL", "ERROR", "WARNING"}, s) {
			t.Errorf("%s: severity %q, want CRITICAL, ERROR or WARNING", p.address(), s)
		}
		docs := nested(p.block.Body, "documentation")
		if len(docs) != 1 {
			t.Errorf("%s: no documentation for the operator it pages", p.address())
			continue
		}
		if mt := p.str(t, docs[0].Body, "mime_type"); mt != "text/markdown" {
			t.Errorf("%s: documentation mime_type %q, want text/markdown", p.address(), mt)
		}
		if p.str(t, docs[0].Body, "subject") == "" {
			t.Errorf("%s: documentation has no subject", p.address())
		}
		// What to do is a numbered list of steps, or at least one command.
		if c := p.str(t, docs[0].Body, "content"); !strings.Contains(c, "\n1. ") || !strings.Contains(c, "`") {
			t.Errorf("%s: documentation tells the operator no steps:\n%s", p.address(), c)
		}
	}
}

// TestGCAlertWindowsFollowTheSchedule: the GC alerts count in ticks of
// gc_schedule, so a slower schedule does not page for a collector that is
// merely between ticks, and a schedule the windows cannot be derived from
// is refused by the variable's validation.
func TestGCAlertWindowsFollowTheSchedule(t *testing.T) {
	type windows struct {
		NotRunningFor   string // the absence that pages
		FailingFor      string // how long errors must go on
		FailingWindow   string // in windows this long
		QuotaWindow     string // quota refusals: the sweep's retry comes every tick
		FleetAlignsOn   string // the fleet chart's points
		GCChartAlignsOn string // the GC deletions chart's points
	}
	cases := map[string]struct {
		reason   string
		schedule string
		valid    bool
		want     windows
	}{
		"Default": {
			reason:   "Every 5 minutes: absent for 15, failing for 3 ticks.",
			schedule: "*/5 * * * *",
			valid:    true,
			want:     windows{"900s", "600s", "300s", "600s", "300s", "300s"},
		},
		"EveryMinute": {
			reason:   "Every minute: still 3 ticks, which is over the API's minimum absence of 120s.",
			schedule: "*/1 * * * *",
			valid:    true,
			want:     windows{"180s", "120s", "60s", "120s", "60s", "60s"},
		},
		"Slower": {
			reason:   "Every 15 minutes: a window shorter than a tick would page between ticks.",
			schedule: "*/15 * * * *",
			valid:    true,
			want:     windows{"2700s", "1800s", "900s", "1800s", "900s", "900s"},
		},
		"Hourly": {
			reason:   "A fixed minute has no interval to derive the windows from: refused.",
			schedule: "0 * * * *",
		},
		"WeekdaysOnly": {
			reason:   "Ticks on some days only would make the absence alert page every weekend: refused.",
			schedule: "*/5 * * * 1-5",
		},
		"StepBeyondAnHour": {
			reason:   "*/60 runs once an hour, not every 60 minutes of a longer cycle: refused.",
			schedule: "*/60 * * * *",
		},
	}
	m := parseModule(t)
	var validation *hclsyntax.Block
	for _, b := range m.blocks {
		if b.Type == "variable" && b.Labels[0] == "gc_schedule" {
			if v := nested(b.Body, "validation"); len(v) == 1 {
				validation = v[0]
			}
		}
	}
	if validation == nil {
		t.Fatal("variable gc_schedule has no validation")
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := evaluate(t, m, map[string]cty.Value{"gc_schedule": cty.StringVal(tc.schedule)})
			ok, diags := validation.Body.Attributes["condition"].Expr.Value(e.ctx)
			if diags.HasErrors() {
				t.Fatalf("gc_schedule's validation does not evaluate: %s", diags.Error())
			}
			if ok.True() != tc.valid {
				t.Fatalf("%s\ngc_schedule %q valid = %v, want %v", tc.reason, tc.schedule, ok.True(), tc.valid)
			}
			if !tc.valid {
				return
			}
			condition := func(policy, kind string) (instance, *hclsyntax.Body) {
				p := e.one(t, "google_monitoring_alert_policy", policy)
				for _, c := range nested(p.block.Body, "conditions") {
					if k := nested(c.Body, kind); len(k) == 1 {
						return p, k[0].Body
					}
				}
				t.Fatalf("%s has no %s", p.address(), kind)
				return p, nil
			}
			alignment := func(p instance, b *hclsyntax.Body) string {
				a := nested(b, "aggregations")
				if len(a) != 1 {
					t.Fatalf("%s: want one aggregations block", p.address())
				}
				return p.str(t, a[0].Body, "alignment_period")
			}
			var got windows
			p, absent := condition("gc_not_running", "condition_absent")
			got.NotRunningFor = p.str(t, absent, "duration")
			p, failing := condition("gc_failing", "condition_threshold")
			got.FailingFor, got.FailingWindow = p.str(t, failing, "duration"), alignment(p, failing)
			p, quota := condition("quota", "condition_threshold")
			got.QuotaWindow = alignment(p, quota)
			d, _ := dashboardUses(t, e)
			for _, tile := range d.GetMosaicLayout().GetTiles() {
				for _, ds := range tile.GetWidget().GetXyChart().GetDataSets() {
					f := ds.GetTimeSeriesQuery().GetTimeSeriesFilter()
					period := fmt.Sprintf("%ds", f.GetAggregation().GetAlignmentPeriod().GetSeconds())
					switch {
					case strings.Contains(f.GetFilter(), "/egress/fleet\""):
						got.FleetAlignsOn = period
					case strings.Contains(f.GetFilter(), "/egress/gc_deleted\""):
						got.GCChartAlignsOn = period
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nwindows for gc_schedule %q (-want +got):\n%s", tc.reason, tc.schedule, diff)
			}
		})
	}
}

// TestBudgetAlertPerThreshold: each threshold the collector tells of
// (budgetalert.Thresholds) has its alert policy, on the threshold's
// series, one incident per namespace; a threshold added in the code alone
// would be logged and page nobody.
func TestBudgetAlertPerThreshold(t *testing.T) {
	e := evaluate(t, parseModule(t), nil)
	var want, got []string
	for _, th := range budgetalert.Thresholds {
		want = append(want, strconv.Itoa(th))
	}
	threshold := regexp.MustCompile(`metric\.label\.threshold="([^"]*)"`)
	for _, p := range e.of("google_monitoring_alert_policy") {
		for n, c := range nested(p.block.Body, "conditions") {
			for _, k := range nested(c.Body, "condition_threshold") {
				filter := p.str(t, k.Body, "filter")
				if !strings.Contains(filter, "/egress/budget_thresholds\"") {
					continue
				}
				th := threshold.FindStringSubmatch(filter)
				if th == nil {
					t.Errorf("%s condition %d: filter %q is of no one threshold", p.address(), n, filter)
					continue
				}
				got = append(got, th[1])
				var groupBy []string
				for _, a := range nested(k.Body, "aggregations") {
					if v, ok := p.attr(t, a.Body, "group_by_fields"); ok {
						groupBy = append(groupBy, stringList(t, p.address(), v)...)
					}
				}
				if diff := cmp.Diff([]string{"metric.label.namespace"}, groupBy); diff != "" {
					t.Errorf("%s condition %d: not one incident per namespace (-want +got):\n%s", p.address(), n, diff)
				}
			}
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("budget alert policies by threshold (-budgetalert.Thresholds +monitoring.tf):\n%s", diff)
	}
}
