package aws

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/egress-proxies/egress/internal/provider"
	"github.com/egress-proxies/egress/internal/provider/aws/ec2fake"
	"github.com/egress-proxies/egress/internal/provider/vmside/vmsidetest"
)

// tokenSource gives one ID token, as idtoken's source does: in the
// AccessToken field.
type tokenSource string

func (s tokenSource) Token() (*oauth2.Token, error) {
	return &oauth2.Token{AccessToken: string(s)}, nil
}

// TestWebIdentityExchange: the functions' only way to AWS, end to end. A
// Google-style ID token for the configured audience is exchanged with
// STS for the role's credentials, and EC2 (which takes no key but the
// ones STS issued) answers the provider's calls signed with them. A
// token of another audience, issuer, subject or key, an expired one, or
// another role gets no credentials: the provider's call fails before
// EC2 sees it, with an error that names STS and is transient (the
// operator fixes the trust; proxies go on).
func TestWebIdentityExchange(t *testing.T) {
	const (
		roleARN  = "arn:aws:iam::123456789012:role/egress-proxy-egress"
		audience = "https://egress.example.com/aws"
		subject  = "104729384756102938475" // the function account's unique id
	)
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	is, err := ec2fake.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]any{"iss": ec2fake.GoogleIssuer, "aud": audience, "sub": subject, "azp": subject,
		"email": "egress-reconcile@project.iam.gserviceaccount.com", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for key, val := range good {
			c[key] = val
		}
		c[k] = v
		return c
	}
	for name, tc := range map[string]struct {
		reason string
		key    *rsa.PrivateKey
		claims map[string]any
		role   string
		code   string // "" for success
	}{
		"Trusted":       {"the function's account, for the audience", is.Key, good, roleARN, ""},
		"OtherAudience": {"a token for another audience", is.Key, with("aud", "https://elsewhere.example.com"), roleARN, "InvalidIdentityToken"},
		"OtherIssuer":   {"a token of another issuer", is.Key, with("iss", "https://issuer.example.com"), roleARN, "InvalidIdentityToken"},
		"OtherSubject":  {"another account's token", is.Key, with("sub", "999999999999999999999"), roleARN, "AccessDenied"},
		"OtherKey":      {"a token signed with a key not the issuer's", other, good, roleARN, "InvalidIdentityToken"},
		"Expired":       {"an expired token", is.Key, with("exp", now.Add(-time.Minute).Unix()), roleARN, "ExpiredTokenException"},
		"OtherRole":     {"a role that does not trust it", is.Key, good, "arn:aws:iam::123456789012:role/someone-else", "AccessDenied"},
	} {
		t.Run(name, func(t *testing.T) {
			fake := ec2fake.New()
			t.Cleanup(fake.Close)
			fake.SetClock(func() time.Time { return now })
			fake.TrustWebIdentity(ec2fake.Trust{RoleARN: roleARN, Issuer: ec2fake.GoogleIssuer, Audience: audience, Subjects: []string{subject},
				JWKSURL: is.JWKSURL(), HTTPClient: is.Client(), Exclusive: true})
			token, err := is.Sign(tc.key, tc.claims)
			if err != nil {
				t.Fatal(err)
			}
			creds, err := WebIdentity(Federation{RoleARN: tc.role, SessionName: "egress-reconcile", Tokens: tokenSource(token),
				Region: "us-east-1", Endpoint: fake.Endpoint(), HTTPClient: fake.Client()})
			if err != nil {
				t.Fatal(err)
			}
			e := &env{fake: fake, st: vmsidetest.NewStatuses(), logs: &syncBuffer{}}
			p, err := New(NewClient(ClientOptions{Credentials: creds, Endpoint: fake.Endpoint(), HTTPClient: fake.Client(), Backoff: noWait}),
				Config{Regions: []string{"us-east-1"}, Renderer: vmsidetest.Renderer, Prober: e.st})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Create(context.Background(), request())
			ec2Calls := 0
			for _, c := range fake.Calls() {
				if c.Action != "AssumeRoleWithWebIdentity" {
					ec2Calls++
					if !strings.HasPrefix(c.AccessKeyID, "ASIA") {
						t.Errorf("%s was signed with %q, not a key STS issued", c.Action, c.AccessKeyID)
					}
				}
			}
			if tc.code == "" {
				if err != nil || len(fake.Instances()) != 1 || ec2Calls == 0 {
					t.Errorf("%s: create = %v with %d instances, want one made with the role's credentials", tc.reason, err, len(fake.Instances()))
				}
				return
			}
			if err == nil || !fromSTS(err) || provider.KindOf(err) != provider.KindTransient || !strings.Contains(err.Error(), tc.code) || !strings.Contains(err.Error(), "AWS_ROLE_ARN") {
				t.Errorf("%s: create = %v; want a transient error from STS naming %s and what to check", tc.reason, err, tc.code)
			}
			if ec2Calls != 0 || len(fake.Instances()) != 0 {
				t.Errorf("%s: EC2 saw %d calls; want none, without credentials", tc.reason, ec2Calls)
			}
		})
	}
}

// TestEC2RefusesAKeyOfItsOwn: with the trust exclusive, the fake's EC2
// takes only what STS issued: a key from anywhere else is AuthFailure,
// so the exchange test above cannot pass by a key that was lying about.
func TestEC2RefusesAKeyOfItsOwn(t *testing.T) {
	e := newEnv(t)
	e.fake.TrustWebIdentity(ec2fake.Trust{RoleARN: "arn:aws:iam::123456789012:role/r", Exclusive: true})
	_, err := e.p.Create(context.Background(), request())
	if errorCode(err) != "AuthFailure" || provider.KindOf(err) != provider.KindPermanent {
		t.Errorf("create signed with a key STS did not issue: %v, want AuthFailure", err)
	}
}
