package provider_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/mock"
)

var gceName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

func validInstanceName(s string) bool { return len(s) <= 63 && gceName.MatchString(s) }

func TestNameFromUID(t *testing.T) {
	cases := map[string]struct {
		reason string
		uid    string
		want   string
	}{
		"CanonicalUUID": {
			reason: "a canonical uuid keeps its text so an operator can read the owner off the VM",
			uid:    "3f2b8c1e-9d4a-4b7e-8c21-0a1b2c3d4e5f",
			want:   "proxy-3f2b8c1e-9d4a-4b7e-8c21-0a1b2c3d4e5f",
		},
		"DigitsFirst": {
			reason: "a uuid that starts with a digit still yields a name that starts with a letter",
			uid:    "01234567-89ab-4cde-8f01-23456789abcd",
			want:   "proxy-01234567-89ab-4cde-8f01-23456789abcd",
		},
		"UpperCase": {
			reason: "upper case is not lowered (that would merge distinct uids); it is hashed",
			uid:    "3F2B8C1E-9D4A-4B7E-8C21-0A1B2C3D4E5F",
			want:   "proxyh-0f78a26af155797ce0244e8ed2bdb1563d036d2045aa220a8bf9331e",
		},
		"Empty": {
			reason: "even an empty uid gives a valid name",
			uid:    "",
			want:   "proxyh-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := provider.NameFromUID(tc.uid)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nNameFromUID(%q) (-want +got):\n%s", tc.reason, tc.uid, diff)
			}
			if !validInstanceName(got) {
				t.Errorf("%s\nNameFromUID(%q) = %q is not a valid GCE instance name", tc.reason, tc.uid, got)
			}
		})
	}
}

func TestNameFromUIDLongAndDistinct(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	got := provider.NameFromUID(long)
	if !validInstanceName(got) {
		t.Errorf("NameFromUID(10,000 x) = %q, want a valid name of at most 63 characters", got)
	}
	if provider.NameFromUID(long) != got {
		t.Errorf("NameFromUID is not deterministic for a long uid")
	}
	upper := "3F2B8C1E-9D4A-4B7E-8C21-0A1B2C3D4E5F"
	if a, b := provider.NameFromUID(upper), provider.NameFromUID(strings.ToLower(upper)); a == b {
		t.Errorf("uids differing only in case share the name %q", a)
	}
	seen := map[string]string{}
	for i := range 10_000 {
		uid := fmt.Sprintf("uid-%d", i)
		n := provider.NameFromUID(uid)
		if prev, ok := seen[n]; ok {
			t.Fatalf("uids %q and %q share the name %q", prev, uid, n)
		}
		seen[n] = uid
	}
}

func FuzzNameFromUID(f *testing.F) {
	for _, s := range []string{"", "a", "3f2b8c1e-9d4a-4b7e-8c21-0a1b2c3d4e5f", "UPPER", "0000", strings.Repeat("-", 100), "ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uid string) {
		got := provider.NameFromUID(uid)
		if !validInstanceName(got) {
			t.Errorf("NameFromUID(%q) = %q is not a valid GCE instance name", uid, got)
		}
		if again := provider.NameFromUID(uid); again != got {
			t.Errorf("NameFromUID(%q) is not deterministic: %q then %q", uid, got, again)
		}
	})
}

func TestErrNotFoundThroughWrapping(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   bool
		kind   provider.Kind
	}{
		"Bare":          {reason: "the sentinel itself", err: provider.ErrNotFound, want: true, kind: provider.KindNotFound},
		"Wrapped":       {reason: "wrapped with %w", err: fmt.Errorf("get gce://p/z/n: %w", provider.ErrNotFound), want: true, kind: provider.KindNotFound},
		"TypedNotFound": {reason: "a classified error of kind NotFound, whatever it wraps", err: provider.NewError(provider.KindNotFound, "get", "gce://p/z/n", errors.New("googleapi: 404")), want: true, kind: provider.KindNotFound},
		"TypedWrapped":  {reason: "a classified error wrapped again", err: fmt.Errorf("reconcile: %w", provider.NewError(provider.KindNotFound, "get", "x", errors.New("404"))), want: true, kind: provider.KindNotFound},
		"Transient":     {reason: "another kind is not ErrNotFound", err: provider.NewError(provider.KindTransient, "get", "x", errors.New("503")), want: false, kind: provider.KindTransient},
		"Unclassified":  {reason: "an unknown error is treated as transient", err: errors.New("boom"), want: false, kind: provider.KindTransient},
		"Nil":           {reason: "nil has no kind", err: nil, want: false, kind: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := errors.Is(tc.err, provider.ErrNotFound); got != tc.want {
				t.Errorf("%s\nerrors.Is(%v, ErrNotFound) = %v, want %v", tc.reason, tc.err, got, tc.want)
			}
			if got := provider.KindOf(tc.err); got != tc.kind {
				t.Errorf("%s\nKindOf(%v) = %q, want %q", tc.reason, tc.err, got, tc.kind)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	cases := map[provider.Kind]bool{
		provider.KindNotFound:      true,
		provider.KindQuota:         true,
		provider.KindRateLimited:   true,
		provider.KindCapacity:      true,
		provider.KindTransient:     true,
		provider.KindPermanent:     false,
		provider.KindAlreadyExists: false,
	}
	for kind, want := range cases {
		err := provider.NewError(kind, "create", "n", errors.New("x"))
		if got := provider.Retryable(err); got != want {
			t.Errorf("Retryable(kind %s) = %v, want %v", kind, got, want)
		}
	}
}

func TestErrorMessageNamesTarget(t *testing.T) {
	err := provider.NewError(provider.KindQuota, "create", "gce://p/us-central1-a/proxy-x", errors.New("QUOTA_EXCEEDED"))
	want := "create gce://p/us-central1-a/proxy-x: Quota: QUOTA_EXCEEDED"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("Error() (-want +got):\n%s", diff)
	}
}

type nopProvider struct{ provider.Provider }

func TestRegistry(t *testing.T) {
	ctx := context.Background()
	r := provider.NewRegistry()
	ctor := func(context.Context) (provider.Provider, error) { return nopProvider{}, nil }
	if err := r.Register("mock", ctor); err != nil {
		t.Fatalf("Register(mock): %v", err)
	}
	if err := r.Register("gcp", ctor); err != nil {
		t.Fatalf("Register(gcp): %v", err)
	}

	cases := map[string]struct {
		reason  string
		do      func() error
		wantErr string
	}{
		"Duplicate": {
			reason:  "a second constructor for a type is refused",
			do:      func() error { return r.Register("mock", ctor) },
			wantErr: `provider registry: type "mock" is already registered`,
		},
		"Unknown": {
			reason:  "an unknown type names the configured ones and PROVIDERS, where they come from",
			do:      func() error { _, err := r.New(ctx, "aws"); return err },
			wantErr: `provider type not configured: "aws" is not among the configured types (PROVIDERS: gcp, mock)`,
		},
		"BadName": {
			reason:  "a type must be a lowercase word",
			do:      func() error { return r.Register("GCP!", ctor) },
			wantErr: `provider registry: type "GCP!" is not valid: want a lowercase word matching ^[a-z][a-z0-9-]{0,31}$`,
		},
		"NilConstructor": {
			reason:  "a nil constructor is refused at registration, not at first use",
			do:      func() error { return r.Register("azure", nil) },
			wantErr: `provider registry: type "azure" has a nil constructor`,
		},
		"ConstructorError": {
			reason: "a failing constructor's error is wrapped with the type",
			do: func() error {
				boom := provider.NewRegistry()
				_ = boom.Register("gcp", func(context.Context) (provider.Provider, error) { return nil, errors.New("GCP_PROJECT is not set") })
				_, err := boom.New(ctx, "gcp")
				return err
			},
			wantErr: `provider registry: constructing "gcp": GCP_PROJECT is not set`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.do()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("%s\nerror (-want +got):\n%s", tc.reason, diff)
			}
		})
	}

	if diff := cmp.Diff([]string{"gcp", "mock"}, r.Types()); diff != "" {
		t.Errorf("Types() (-want +got):\n%s", diff)
	}
	if !r.Has("mock") || r.Has("aws") {
		t.Errorf("Has(mock)=%v Has(aws)=%v, want true false", r.Has("mock"), r.Has("aws"))
	}
	if p, err := r.New(ctx, "mock"); err != nil || p == nil {
		t.Errorf("New(mock) = %v, %v; want a provider", p, err)
	}
	if _, err := provider.NewSet(r).Get(ctx, "aws"); !errors.Is(err, provider.ErrNotConfigured) {
		t.Errorf("Set.Get(aws) = %v, want an error that errors.Is ErrNotConfigured, which a deletion acts on", err)
	}
}

func TestValidateDeployment(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		ok     bool
	}{
		"Default":      {reason: "the default is a label", name: provider.DefaultDeployment, ok: true},
		"WithDigits":   {reason: "letters, digits and hyphens", name: "staging-2", ok: true},
		"Longest":      {reason: "63 characters is the limit", name: "a" + strings.Repeat("b", 62), ok: true},
		"TooLong":      {reason: "64 characters is one too many", name: "a" + strings.Repeat("b", 63)},
		"Empty":        {reason: "a label has at least one character", name: ""},
		"LeadingDigit": {reason: "RFC 1035 starts with a letter", name: "2prod"},
		"TrailingDash": {reason: "and ends with a letter or digit", name: "prod-"},
		"Upper":        {reason: "GCE label values are lowercase", name: "Prod"},
		"Underscore":   {reason: "an underscore is no label character here", name: "prod_eu"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := provider.ValidateDeployment(tc.name)
			if (err == nil) != tc.ok {
				t.Errorf("%s\nValidateDeployment(%q) = %v, want ok %v", tc.reason, tc.name, err, tc.ok)
			}
		})
	}
}

// TestRegistryValidators: each type's rules are the ones registered
// beside its constructor; a type registered without any has none, and an
// unknown type is an error, not "no rules".
func TestRegistryValidators(t *testing.T) {
	r := provider.NewRegistry()
	ctor := func(context.Context) (provider.Provider, error) { return nopProvider{}, nil }
	strict := func(req provider.ValidateRequest) []provider.Violation {
		if req.Placement.Region == "mars" {
			return []provider.Violation{{Field: "placement.region", Reason: "REGION_NOT_ALLOWED", Description: "no"}}
		}
		return nil
	}
	_ = r.Register("strict", ctor, provider.WithValidator(strict))
	_ = r.Register("lax", ctor)
	set := provider.NewSet(r)
	mars := provider.ValidateRequest{Placement: provider.Placement{Region: "mars"}}
	cases := map[string]struct {
		reason  string
		typ     string
		want    []provider.Violation
		wantErr bool
	}{
		"Registered": {reason: "the rules registered beside the constructor", typ: "strict", want: []provider.Violation{{Field: "placement.region", Reason: "REGION_NOT_ALLOWED", Description: "no"}}},
		"None":       {reason: "a type registered without rules has none", typ: "lax"},
		"Unknown":    {reason: "an unknown type is an error", typ: "aws", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := set.Validate(tc.typ, mars)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nValidate(%s): %v, wantErr %v", tc.reason, tc.typ, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nviolations (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSetConstructsOnce(t *testing.T) {
	ctx := context.Background()
	r := provider.NewRegistry()
	made := 0
	_ = r.Register("mock", func(context.Context) (provider.Provider, error) { made++; return nopProvider{}, nil })
	s := provider.NewSet(r)
	for range 3 {
		if _, err := s.Get(ctx, "mock"); err != nil {
			t.Fatal(err)
		}
	}
	if made != 1 {
		t.Errorf("three Gets constructed the provider %d times, want 1", made)
	}
	if _, err := s.Get(ctx, "gcp"); err == nil {
		t.Errorf("Get of an unregistered type succeeded")
	}
}

// decorator is a provider decorator with an Unwrap method.
type decorator struct{ provider.Provider }

func (d decorator) Unwrap() provider.Provider { return d.Provider }

func TestUnwrap(t *testing.T) {
	var inner provider.Provider = mock.New(mock.Options{})
	if got := provider.Unwrap(decorator{decorator{inner}}); got != inner {
		t.Errorf("Unwrap of two decorators = %#v, want the provider beneath them", got)
	}
	if got := provider.Unwrap(inner); got != inner {
		t.Errorf("Unwrap of an undecorated provider = %#v, want itself", got)
	}
}

// plain is a provider that cannot reconfigure a VM.
type plain struct{ provider.Provider }

// TestRegistryInPlace: a type registered as taking live changes in place
// says so to the API, which constructs no provider; a Set refuses to hand
// out one registered so that cannot reconfigure a VM, whose every live
// change would make a VM no request counted.
func TestRegistryInPlace(t *testing.T) {
	ctx := context.Background()
	r := provider.NewRegistry()
	_ = r.Register("mock", func(context.Context) (provider.Provider, error) { return mock.New(mock.Options{}), nil }, provider.InPlace())
	_ = r.Register("plain", func(context.Context) (provider.Provider, error) { return plain{mock.New(mock.Options{})}, nil }, provider.InPlace())
	_ = r.Register("other", func(context.Context) (provider.Provider, error) { return plain{mock.New(mock.Options{})}, nil })
	set := provider.NewSet(r)
	type got struct {
		InPlace  bool
		GetFails bool
	}
	for typ, want := range map[string]got{"mock": {InPlace: true}, "plain": {InPlace: true, GetFails: true}, "other": {}, "absent": {GetFails: true}} {
		_, err := set.Get(ctx, typ)
		if diff := cmp.Diff(want, got{InPlace: set.InPlace(typ), GetFails: err != nil}); diff != "" {
			t.Errorf("type %s (-want +got):\n%s (%v)", typ, diff, err)
		}
	}
}
