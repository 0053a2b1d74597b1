package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/egress-proxies/egress/internal/pricing"
	"github.com/egress-proxies/egress/internal/testenv"
)

// axeSource is axe-core, pinned by axe/package.json and its lockfile and
// committed minified (axe/axe.min.js, MPL-2.0, axe/LICENSE), so the test
// needs no Node: the accessibility checker injected into each page. To
// move it: change the version, `npm install --prefix dev/localstack/axe`,
// copy node_modules/axe-core/axe.min.js over it.
//
//go:embed axe/axe.min.js
var axeSource string

// screenshotsDir is where the README's screenshots of the console live;
// the test writes them there when EGRESS_SCREENSHOTS=1 (make screenshots),
// and to a folder of its own otherwise.
const screenshotsDir = "../../docs/images/console"

// browserPath is Debian's Chromium (scripts/install-deps.sh installs it),
// or another Chromium or Chrome that names its version.
func browserPath(t *testing.T) string {
	return testenv.Require(t, testenv.Chromium)
}

// browserSession is one headless Chromium shared by the console's
// subtests, each persona in a tab of its own.
type browserSession struct {
	ctx   context.Context
	shots string
	s     *liveStack
}

// tab opens a tab that acts as who ("" for the local identity: the
// browser sends no identity, as on `make run`).
func (b *browserSession) tab(t *testing.T, who string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	t.Cleanup(cancel)
	err := chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			// data-confirm's question: the person says yes.
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	})
	if err == nil {
		_, err = chromedp.Call(ctx, network.Enable, network.EnableParams{})
	}
	if err == nil && who != "" {
		_, err = chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + unsignedToken(who)}})
	}
	for _, perm := range []string{"clipboard-read", "clipboard-write"} {
		if err == nil {
			_, err = chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
				Permission: &browser.PermissionDescriptor{Name: perm}, Setting: browser.PermissionSettingGranted, Origin: b.s.url})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// drive runs actions in a tab, failing the test with what failed.
func drive(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		// What the page said, to tell why.
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		where, _ := chromedp.Run(lctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		t.Fatalf("%s: %v\nthe page: %s", what, err, where)
	}
}

// value runs one action that gives a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// step is an action whose value is not needed.
func step[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := a(ctx, t)
		return err
	})
}

// text is the text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, "read "+sel, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent`, sel)))
}

// words is the text of the first element sel selects as a person reads
// it (innerText: a term and its description apart), its white space
// collapsed to single spaces.
func words(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	read := value(t, ctx, "read "+sel, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText`, sel)))
	return strings.Join(strings.Fields(read), " ")
}

// html is the page's whole HTML as the browser holds it.
func html(t *testing.T, ctx context.Context) string {
	t.Helper()
	return value(t, ctx, "read the page", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
}

// axeViolation is one rule axe-core found broken.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []string `json:"target"`
	} `json:"nodes"`
}

// accessible runs axe-core on the page and fails on any serious or
// critical violation.
func (b *browserSession) accessible(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	value(t, ctx, "inject axe-core", chromedp.Evaluate[bool](axeSource+";\ntrue"))
	raw := value(t, ctx, "axe on "+name, chromedp.Evaluate[string](`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
	var vs []axeViolation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		t.Fatalf("axe's answer on %s: %v", name, err)
	}
	bad := 0
	var all []string
	for _, v := range vs {
		all = append(all, v.ID+" ("+v.Impact+")")
		if v.Impact == "serious" || v.Impact == "critical" {
			bad++
			t.Errorf("axe on the %s page: %s (%s): %s at %v", name, v.ID, v.Impact, v.Help, v.Nodes)
		}
	}
	t.Logf("axe on the %s page: %d violations %v, %d serious or critical", name, len(vs), all, bad)
}

// shot writes a screenshot of the whole page.
func (b *browserSession) shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The page is driven with JavaScript that finds elements afresh each
// time (document.querySelector): chromedp's DOM queries keep the node
// tree of the page they first saw, and lose it across the navigations a
// form's post and its redirect make.

// waitJS waits until expr is true. It asks again across a navigation, so
// it follows an action to the page it lands on.
func waitJS(expr, what string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			ok, err := chromedp.Evaluate[bool](expr)(ctx, t)
			if err == nil && ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s never came (last error %v)", what, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
}

// waitText waits until sel's text holds want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(document.querySelector(%q) || {textContent: ""}).textContent.includes(%q)`, sel, want), fmt.Sprintf("%q in %s", want, sel))
}

// visible waits until sel is on the page and shown.
func visible(sel string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(e => !!e && e.getClientRects().length > 0)(document.querySelector(%q))`, sel), sel)
}

// onElement runs body (a function of the element e) on sel.
func onElement(sel, body string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(e => { if (!e) return false; %s; return true })(document.querySelector(%q))`, body, sel))(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("no %s on the page", sel)
		}
		return err
	})
}

// fill gives an input or a select a value, as typing or choosing does.
func fill(sel, v string) chromedp.Action[chromedp.Void] {
	return onElement(sel, fmt.Sprintf(`e.focus(); e.value = %q; e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true}))`, v))
}

func click(sel string) chromedp.Action[chromedp.Void] { return onElement(sel, "e.click()") }

func focus(sel string) chromedp.Action[chromedp.Void] { return onElement(sel, "e.focus()") }

// submit clicks sel, a form's button or a link, and waits for the page it
// leads to: a mark on the window goes with the page it was set on.
func submit(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		step(chromedp.Evaluate[bool](`window.__leaving = true`)),
		click(sel),
		waitJS(`window.__leaving !== true && document.readyState === "complete"`, "the page after "+sel))
}

// console drives the web console in headless Chromium, as people of
// each role would, against this stack; axe-core checks each page.
func (s *liveStack) console(t *testing.T) {
	begun := time.Now()
	exe := browserPath(t)
	shots := t.TempDir()
	if os.Getenv("EGRESS_SCREENSHOTS") == "1" {
		shots = screenshotsDir
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	b := &browserSession{ctx: bctx, shots: shots, s: s}

	// A local server the proxy will reach: allowed by MOCK_SERVE_ALLOW.
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "answer through the console's proxy")
	}))
	defer target.Close()
	port := target.Listener.Addr().(*net.TCPAddr).Port
	through := func(proxyURL string) string {
		u, err := url.Parse(proxyURL)
		if err != nil {
			return "bad URL"
		}
		c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 30 * time.Second}
		resp, err := c.Get(target.URL + "/")
		if err != nil {
			return "refused"
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body)
	}

	admin := b.tab(t, "")
	nsPage := s.url + "/console/namespaces/console-team"
	proxyPage := nsPage + "/proxies/web"

	// The local admin makes a namespace with the console's form.
	drive(t, admin, "the home page", chromedp.Navigate(s.url+"/console/"), visible("h1"))
	if banner := text(t, admin, ".banner"); !strings.Contains(banner, "local-admin@localhost") || !strings.Contains(banner, "LOCAL_IDENTITY") {
		t.Errorf("the local banner says %q, want the local identity named", banner)
	}
	drive(t, admin, "create a namespace",
		fill(`input[name="namespace"]`, "console-team"),
		fill(`input[name="owner"]`, "local-admin@localhost"),
		submit(`button[data-action="namespaces create"]`),
		waitText("h1", "Namespace console-team"))
	drive(t, admin, "add a viewer",
		fill(`form[action$="/add-member"] input[name="member"]`, "viewer@example.com"),
		fill(`select[name="role"]`, "viewer"),
		submit(`button[data-action="namespaces add-member"]`),
		waitText("main", "Member saved."))
	drive(t, admin, "the home page again", chromedp.Navigate(s.url+"/console/"), waitText("main", "console-team"))
	b.accessible(t, admin, "namespaces")
	b.shot(t, admin, "namespaces")

	t.Run("RefusalBesideItsField", func(t *testing.T) {
		drive(t, admin, "a create the API refuses", chromedp.Navigate(nsPage),
			fill(`input[name="name"]`, "web"),
			fill(`input[name="spec.placement.region"]`, "us-central1"),
			fill(`input[name="spec.placement.zone"]`, "europe-west1-b"),
			fill(`input[name="spec.allowedSourceRanges"]`, "127.0.0.1/32"),
			submit(`button[data-action="proxies create"]`),
			visible(`ul[data-field="spec.placement.zone"]`))
		if got := text(t, admin, `ul[data-field="spec.placement.zone"]`); !strings.Contains(got, "europe-west1-b") {
			t.Errorf("the zone's violation says %q, want the API's rule naming europe-west1-b", got)
		}
		if page := html(t, admin); strings.Contains(page, "fieldViolations") {
			t.Error("the page shows the API's JSON")
		}
		b.accessible(t, admin, "refused create")
		b.shot(t, admin, "create-refused")
	})

	var firstURL string
	t.Run("CreateWatchReadyAndUse", func(t *testing.T) {
		// With the keyboard alone: focus the first input, type, Tab from
		// field to field, Enter submits.
		drive(t, admin, "a create by keyboard", chromedp.Navigate(nsPage), step(chromedp.Evaluate[bool](`window.__leaving = true`)),
			focus(`input[name="name"]`),
			chromedp.KeyEvent("web"), chromedp.KeyEvent("\t"), chromedp.KeyEvent("us-central1"),
			chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"), chromedp.KeyEvent("127.0.0.1/32"),
			chromedp.KeyEvent("\t"), chromedp.KeyEvent(fmt.Sprint(port)), chromedp.KeyEvent("\r"),
			waitText("h1", "Proxy web"))
		// The page follows the proxy to Ready without a reload: a mark
		// set on the window now is still there when it is Ready.
		drive(t, admin, "wait for Ready without a reload",
			step(chromedp.Evaluate[bool](`window.__noReload = true`)),
			visible("#proxy-status .phase-Ready"))
		if !value(t, admin, "the mark", chromedp.Evaluate[bool](`window.__noReload === true`)) {
			t.Error("the page reloaded on its way to Ready")
		}
		if strings.Contains(html(t, admin), "@127.") {
			t.Error("the proxy's page holds its URL before it is asked for")
		}
		b.accessible(t, admin, "proxy")
		b.shot(t, admin, "proxy")

		drive(t, admin, "show and copy the URL",
			click(`#show-url`),
			visible(`#proxy-url`),
			click(`#copy-url`),
			waitText("#copy-status", "Copied."))
		clip := value(t, admin, "read the clipboard", chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise))
		firstURL = text(t, admin, "#proxy-url")
		if clip != firstURL || !strings.HasPrefix(clip, "http://") {
			t.Fatalf("the clipboard holds %q, the page shows %q", clip, firstURL)
		}
		b.accessible(t, admin, "proxy URL shown")
		if got := through(clip); got != "200 answer through the console's proxy" {
			t.Errorf("a request through the copied URL: %s", got)
		}
	})
	if t.Failed() {
		return
	}

	t.Run("CostShown", func(t *testing.T) {
		// The pages show the API's own figures, never their own: the
		// namespace's month from its GET (computed as of the request, so
		// read before and after the page, which shows one of the two),
		// and web's status.cost as the reconciler wrote it. The mock's
		// prices are USD, read by the collector's first tick, so the
		// namespace's month is known and more than nothing.
		before := s.namespaceMonth(t, "console-team")
		drive(t, admin, "the namespace's month", chromedp.Navigate(nsPage), visible("#namespace-month"), visible("#proxy-rows tr"))
		month := words(t, admin, "#namespace-month")
		row := words(t, admin, "#proxy-rows tr:first-child td:last-child")
		after := s.namespaceMonth(t, "console-team")
		if after.Unknown != "" || after.Currency != "USD" || after.Forecast.Nanos <= 0 || after.Forecast.Nanos < after.MonthToDate.Nanos {
			t.Errorf("the API's month of console-team: %+v, want known, in USD, a forecast above 0 and at least the month so far", after)
		}
		if want := []string{shownMonth(before), shownMonth(after)}; !strings.HasPrefix(month, want[0]) && !strings.HasPrefix(month, want[1]) {
			t.Errorf("the namespace's month says\n%q\nwant it to begin with the API's, before or after the page:\n%q", month, want)
		}
		webCost := s.proxyCost(t, "console-team", "web")
		if webCost == nil {
			t.Fatal("web is Ready with no status.cost: the reconciler writes it with the status")
		}
		if want := shownCell(webCost); row != want {
			t.Errorf("the table's cost of web says %q, want the API's status.cost %q", row, want)
		}
		t.Logf("the namespace's month: %q; web's cost in the table: %q", month, row)
		b.accessible(t, admin, "namespace with its month")
		b.shot(t, admin, "namespace-month")

		drive(t, admin, "the proxy's cost", chromedp.Navigate(proxyPage), visible("#proxy-cost"))
		status := words(t, admin, "#proxy-cost")
		webCost = s.proxyCost(t, "console-team", "web")
		t.Logf("web's cost on its page: %q", status)
		if want := shownLine(webCost) + ", as of "; !strings.HasPrefix(status, want) {
			t.Errorf("the proxy's cost says\n%q\nwant it to begin with the API's status.cost\n%q", status, want)
		}
	})

	t.Run("ChangeRanges", func(t *testing.T) {
		drive(t, admin, "change the ranges", chromedp.Navigate(proxyPage),
			fill(`#update-form input[name="spec.allowedSourceRanges"]`, "127.0.0.1/32, 198.51.100.0/24"),
			submit(`button[data-action="proxies update"]`),
			waitText("main", "Change sent."),
			waitText("#proxy-status", "2 (the VM serves 2)"))
		if got := text(t, admin, "#proxy-status"); !strings.Contains(got, "198.51.100.0/24") || !strings.Contains(got, "Ready") {
			t.Errorf("after the change the status says %q", got)
		}
	})

	t.Run("RotateCredentials", func(t *testing.T) {
		drive(t, admin, "rotate the credentials", chromedp.Navigate(proxyPage),
			submit(`button[data-action="proxies rotate-credentials"]`),
			waitText("main", "New credentials asked for"),
			waitText("#proxy-status", "3 (the VM serves 3)"),
			click(`#show-url`),
			visible(`#proxy-url`))
		second := text(t, admin, "#proxy-url")
		type answers struct{ Old, New string }
		got := answers{Old: through(firstURL), New: through(second)}
		got.Old, _, _ = strings.Cut(got.Old, " ")
		want := answers{Old: "407", New: "200 answer through the console's proxy"}
		if second == firstURL || got != want {
			t.Errorf("after rotate-credentials: URL changed %v; answers %+v, want %+v", second != firstURL, got, want)
		}
	})

	t.Run("CrossSiteRefused", func(t *testing.T) { s.crossSite(t, admin) })

	t.Run("ViewerSeesNoActionNorURL", func(t *testing.T) {
		viewer := b.tab(t, "viewer@example.com")
		for _, p := range []string{nsPage, proxyPage} {
			drive(t, viewer, "a viewer's page", chromedp.Navigate(p), visible("h1"))
			page := html(t, viewer)
			u, _ := url.Parse(firstURL)
			pass, _ := u.User.Password()
			if strings.Contains(page, "data-action") || strings.Contains(page, "show-url") || strings.Contains(page, u.User.Username()) || strings.Contains(page, pass) {
				t.Errorf("a viewer's page %s offers an action, the URL or its credentials", p)
			}
			b.accessible(t, viewer, "viewer's "+path.Base(p))
		}
		b.shot(t, viewer, "viewer")
	})

	t.Run("NonMemberSeesNothing", func(t *testing.T) {
		outsider := b.tab(t, "mallory@example.com")
		drive(t, outsider, "an outsider's look", chromedp.Navigate(nsPage), visible("h1"))
		page := html(t, outsider)
		if !strings.Contains(page, "has no role in namespace console-team") || strings.Contains(page, `/proxies/web"`) {
			t.Error("an outsider's page of console-team: want the API's refusal and no proxy")
		}
		b.accessible(t, outsider, "refused")
		drive(t, outsider, "an outsider's home", chromedp.Navigate(s.url+"/console/"), waitText("main", "member of no namespace"))
	})

	t.Run("Pools", func(t *testing.T) {
		drive(t, admin, "the pools", chromedp.Navigate(s.url+"/console/pools"), waitText("h1", "Warm pools"))
		b.accessible(t, admin, "pools")
		b.shot(t, admin, "pools")
	})

	t.Run("NarrowWindow", func(t *testing.T) {
		if _, err := chromedp.Call(admin, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 390, Height: 844, DeviceScaleFactor: 2, Mobile: true}); err != nil {
			t.Fatal(err)
		}
		drive(t, admin, "a phone's width", chromedp.Navigate(proxyPage), visible("h1"))
		if value(t, admin, "overflow", chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth + 1`)) {
			t.Error("the proxy's page scrolls sideways at 390 pixels")
		}
		b.shot(t, admin, "proxy-narrow")
		if _, err := chromedp.Call(admin, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		drive(t, admin, "ask to delete", chromedp.Navigate(proxyPage),
			submit(`a[data-action="proxies delete"]`),
			waitText("main", "Delete proxy web of namespace console-team?"))
		b.accessible(t, admin, "delete confirmation")
		b.shot(t, admin, "delete")
		drive(t, admin, "delete", submit(`button[data-action="proxies delete"]`),
			waitText("main", "Deletion asked for"),
			waitText("main", "Proxy web is gone"))
		if got := through(firstURL); got != "refused" {
			t.Errorf("the deleted proxy still answers: %s", got)
		}
	})
	t.Logf("the console's browser test took %s", time.Since(begun).Round(100*time.Millisecond))
}

// namespaceMonth is the namespace's month as its GET answers the local
// admin now; the zero Cost where it answers none.
func (s *liveStack) namespaceMonth(t *testing.T, ns string) pricing.Cost {
	t.Helper()
	resp := s.doAs(t, "", http.MethodGet, "/v1/namespaces/"+ns, nil)
	defer resp.Body.Close()
	var n struct{ Month *pricing.Cost }
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET namespace %s: %d %v", ns, resp.StatusCode, err)
	}
	if n.Month == nil {
		return pricing.Cost{}
	}
	return *n.Month
}

// proxyCost is the proxy's status.cost as its GET answers the local
// admin now, nil where it has none.
func (s *liveStack) proxyCost(t *testing.T, ns, name string) *pricing.Cost {
	t.Helper()
	resp := s.doAs(t, "", http.MethodGet, "/v1/namespaces/"+ns+"/proxies/"+name, nil)
	defer resp.Body.Close()
	var p struct{ Status struct{ Cost *pricing.Cost } }
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET proxy %s/%s: %d %v", ns, name, resp.StatusCode, err)
	}
	return p.Status.Cost
}

// shownMonth is how a namespace page words a month with no budget: its
// figures to the cent, what the deleted proxies spent being the month so
// far that its proxies' VM, address and traffic do not hold.
func shownMonth(c pricing.Cost) string {
	deleted := pricing.Money{Currency: c.Currency, Nanos: c.MonthToDate.Nanos - c.VM.Nanos - c.Address.Nanos - c.Traffic.Nanos}
	apart := fmt.Sprintf("VM %s, address %s, traffic %s", c.VM.ToCent(), c.Address.ToCent(), c.Traffic.ToCent())
	if deleted.Nanos != 0 {
		apart += ", deleted proxies " + deleted.ToCent()
	}
	return fmt.Sprintf("So far %s %s (%s) Forecast %s %s, if what runs now runs to the month's end Budget none",
		c.MonthToDate.ToCent(), c.Currency, apart, c.Forecast.ToCent(), c.Currency)
}

// shownCell is how the proxies' table words a proxy's status.cost.
func shownCell(c *pricing.Cost) string {
	if c.Unknown != "" {
		return "unknown (" + c.Unknown + ")"
	}
	return fmt.Sprintf("%s / %s %s", c.MonthToDate.ToCent(), c.Forecast.ToCent(), c.Currency)
}

// shownLine is how a proxy's page words its status.cost, up to its time.
func shownLine(c *pricing.Cost) string {
	if c.Unknown != "" {
		return c.Month + ": unknown (" + c.Unknown + ")"
	}
	return fmt.Sprintf("%s: %s %s so far, %s %s forecast (VM %s, address %s, traffic %s)", c.Month,
		c.MonthToDate.ToCent(), c.Currency, c.Forecast.ToCent(), c.Currency, c.VM.ToCent(), c.Address.ToCent(), c.Traffic.ToCent())
}
