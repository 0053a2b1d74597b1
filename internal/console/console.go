package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/egress-proxies/egress/internal/clock"
	"github.com/egress-proxies/egress/internal/httpapi"
)

// Prefix is where the console is served.
const Prefix = "/console/"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Identifier says who a request is, as the API decides it. *httpapi.API
// satisfies it.
type Identifier interface {
	Identify(r *http.Request) (httpapi.Caller, error)
}

// Options configure the console.
type Options struct {
	// API serves the API's routes; the console calls it in process.
	API http.Handler
	// Identity is the API's own decision of who a request is.
	Identity Identifier
	Clock    clock.Clock
	Log      *slog.Logger
	// IAP tells the pages that people sign in through Identity-Aware
	// Proxy (IAP_AUDIENCE is set).
	IAP bool
}

// Console serves the pages.
type Console struct {
	opts    Options
	mux     *http.ServeMux
	pages   map[string]*template.Template
	assets  map[string]asset // by hashed name
	urls    map[string]string
	history *History
	handler http.Handler
}

type asset struct {
	body        []byte
	contentType string
}

// New returns the console.
func New(opts Options) (*Console, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	c := &Console{opts: opts, mux: http.NewServeMux(), assets: map[string]asset{}, urls: map[string]string{}, history: NewHistory(60, 2000)}
	if err := c.loadAssets(); err != nil {
		return nil, err
	}
	if err := c.loadTemplates(); err != nil {
		return nil, err
	}
	c.route()
	c.handler = http.NewCrossOriginProtection().Handler(c.mux)
	return c, nil
}

// loadAssets names each asset by a hash of its content:
// console.css → console.1a2b3c4d5e6f.css.
func (c *Console) loadAssets() error {
	return fs.WalkDir(assetFS, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFS.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		base := path.Base(p)
		ext := path.Ext(base)
		hashed := strings.TrimSuffix(base, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
		c.assets[hashed] = asset{body: b, contentType: types[ext]}
		c.urls[base] = Prefix + "assets/" + hashed
		return nil
	})
}

func (c *Console) loadTemplates() error {
	funcs := template.FuncMap{
		"asset":     func(name string) string { return c.urls[name] },
		"phaseIcon": phaseIcon,
		"bytes":     humanBytes,
		"join":      strings.Join,
		"ports":     joinPorts,
		"pathEsc":   pathEscape,
		"list":      strings.Fields,
		"field":     newField,
		"age":       age,
		"cents":     cents,
	}
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html")
	if err != nil {
		return err
	}
	c.pages = map[string]*template.Template{}
	entries, err := fs.ReadDir(templateFS, "templates")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if name == "layout.html" || name == "parts.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name)
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		c.pages[strings.TrimSuffix(name, ".html")] = t
	}
	return nil
}

// ServeHTTP serves a console request with the console's headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No inline script or style, nothing from another origin, no frame.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	c.handler.ServeHTTP(w, r)
}

func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := c.assets[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", a.contentType)
	// The name carries the content's hash: a new content is a new name.
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Write(a.body)
}

// render writes a page, or the fragment of it named fragment ("" for the
// whole page).
func (c *Console) render(w http.ResponseWriter, code int, page, fragment string, data any) {
	t, ok := c.pages[page]
	if !ok {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	name := "layout.html"
	if fragment != "" {
		name = fragment
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		c.opts.Log.Error("console page failed", slog.String("page", page), slog.Any("error", err))
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Pages carry what one caller may see: never stored by a cache.
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// ctxKey carries the browser's request to the in-process transport.
type ctxKey struct{}

func withRequest(ctx context.Context, r *http.Request) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// fieldData is one input of a form, for the "input" template.
type fieldData struct {
	Name, Label, Hint, Type, Value string
	Required                       bool
	Errors                         []string
}

func newField(f *form, name, label, hint, typ string, required bool) fieldData {
	return fieldData{Name: name, Label: label, Hint: hint, Type: typ, Value: f.Values[name], Required: required, Errors: f.Errors[name]}
}

// age is how long ago t was, in its largest unit: 45s, 12m, 3h, 2d.
func age(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
