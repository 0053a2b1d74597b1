package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/egress-proxies/egress/internal/httpapi"
	"github.com/egress-proxies/egress/internal/iap"
	"github.com/egress-proxies/egress/internal/iap/iaptest"
)

// TestIAPIdentity: a browser's identity through Identity-Aware Proxy, its
// signed header verified against Google's key set (a test key served as
// it), with the same roles as an ID token's; one identity per request.
func TestIAPIdentity(t *testing.T) {
	const audience = "/projects/123456789/locations/us-central1/services/proxy-api"
	const iapAgent = "service-123456789@gcp-sa-iap.iam.gserviceaccount.com"
	google := iaptest.NewSigner(t, "iap-1")
	forger := iaptest.NewSigner(t, "iap-1")
	verifier, err := iap.New(context.Background(), audience, iap.Options{Client: iaptest.Client(nil, google)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	as := func(email string) string { return google.Sign(t, iaptest.Valid(audience, email, now)) }
	expired := iaptest.Valid(audience, viewer, now.Add(-time.Hour))
	wrongAud := iaptest.Valid("/projects/123456789/locations/us-central1/services/other", viewer, now)
	cases := map[string]struct {
		reason     string
		iapOff     bool
		headers    map[string]string
		want       int // GET of team-a's namespace
		wantReason string
	}{
		"Viewer":        {reason: "a member through IAP reads her namespace", headers: map[string]string{iap.Header: as(viewer)}, want: 200},
		"WithIAPHop":    {reason: "IAP's own ID token in X-Serverless-Authorization is its hop to Cloud Run, not a second identity", headers: map[string]string{iap.Header: as(viewer), "X-Serverless-Authorization": "Bearer " + token(iapAgent)}, want: 200},
		"Stranger":      {reason: "the same rules as an ID token's: no role, 403", headers: map[string]string{iap.Header: as(stranger)}, want: 403, wantReason: "NAMESPACE_ACCESS_DENIED"},
		"Admin":         {reason: "admins by API_ADMINS, whatever the source", headers: map[string]string{iap.Header: as(admin)}, want: 200},
		"WrongAudience": {reason: "an assertion for another service", headers: map[string]string{iap.Header: google.Sign(t, wrongAud)}, want: 401, wantReason: httpapi.ReasonIAPAssertionInvalid},
		"Expired":       {reason: "an expired assertion", headers: map[string]string{iap.Header: google.Sign(t, expired)}, want: 401, wantReason: httpapi.ReasonIAPAssertionInvalid},
		"BadSignature":  {reason: "signed by a key Google does not publish", headers: map[string]string{iap.Header: forger.Sign(t, iaptest.Valid(audience, admin, now))}, want: 401, wantReason: httpapi.ReasonIAPAssertionInvalid},
		"AndIDToken": {reason: "an assertion and an ID token: two identities, refused",
			headers: map[string]string{iap.Header: as(viewer), "Authorization": "Bearer " + token(viewer)}, want: 400, wantReason: httpapi.ReasonIdentityAmbiguous},
		"AndServerlessToken": {reason: "an assertion and someone's token in X-Serverless-Authorization",
			headers: map[string]string{iap.Header: as(viewer), "X-Serverless-Authorization": "Bearer " + token(admin)}, want: 400, wantReason: httpapi.ReasonIdentityAmbiguous},
		"IAPAgentAlone": {reason: "IAP's own token without an assertion names no person",
			headers: map[string]string{"X-Serverless-Authorization": "Bearer " + token(iapAgent)}, want: 401, wantReason: httpapi.ReasonUnauthenticated},
		"IAPOff": {reason: "a deployment without IAP_AUDIENCE takes no assertion", iapOff: true,
			headers: map[string]string{iap.Header: as(viewer)}, want: 401, wantReason: httpapi.ReasonIAPNotEnabled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := memEnv(t, func(o *httpapi.Options) {
				if !tc.iapOff {
					o.IAP = verifier
				}
			})
			e.seed()
			resp, b := e.doHeaders("GET", "/v1/namespaces/team-a", tc.headers)
			if resp.StatusCode != tc.want {
				t.Fatalf("%s\nstatus %d, want %d\n%s", tc.reason, resp.StatusCode, tc.want, b)
			}
			if tc.wantReason != "" {
				if got := decodeErr(t, b).reason(); got != tc.wantReason {
					t.Errorf("%s\nreason %s, want %s\n%s", tc.reason, got, tc.wantReason, b)
				}
			}
		})
	}
}
