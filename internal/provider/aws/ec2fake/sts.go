package ec2fake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Trust is what STS holds of a role that trusts a web identity: the
// role's trust policy, as the deployment's Terraform writes it for
// Google (Principal Federated accounts.google.com, conditions on the
// audience and the subject), and where the issuer's keys are.
type Trust struct {
	// RoleARN is the role that may be assumed.
	RoleARN string
	// Issuer is the token's iss: Google's is https://accounts.google.com.
	Issuer string
	// Audience is the aud the token must carry.
	Audience string
	// Subjects are the sub values allowed: the unique ids of the Google
	// service accounts the role trusts.
	Subjects []string
	// JWKSURL is where the issuer's signing keys are, as a JSON Web Key
	// Set (Google's: https://www.googleapis.com/oauth2/v3/certs); the
	// fake fetches it with HTTPClient (nil: http.DefaultClient).
	JWKSURL    string
	HTTPClient *http.Client
	// Exclusive makes EC2 accept only the access keys STS issued, and
	// only until they expire.
	Exclusive bool
}

// TrustWebIdentity makes STS trust a web identity as t says.
func (s *Server) TrustWebIdentity(t Trust) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trust = &t
}

// sessionName is the form of RoleSessionName.
var sessionName = regexp.MustCompile(`^[\w+=,.@-]{2,64}$`)

// assumeRoleWithWebIdentity is STS's AssumeRoleWithWebIdentity (an
// unsigned call of the awsquery protocol, version 2011-06-15): the token
// is checked as STS checks it, signature (RS256, the key its kid names),
// issuer, audience, expiry, and then the role's trust of its subject;
// the answer is temporary credentials of the role.
func (s *Server) assumeRoleWithWebIdentity(w http.ResponseWriter, form url.Values) {
	s.mu.Lock()
	s.calls = append(s.calls, Call{Action: "AssumeRoleWithWebIdentity"})
	trust, now := s.trust, s.clock()
	s.mu.Unlock()

	fail := func(status int, code, format string, args ...any) {
		b, _ := xml.Marshal(stsErrorResponse{Error: stsErrorXML{Type: "Sender", Code: code, Message: fmt.Sprintf(format, args...)}, RequestID: "00000000-0000-4000-8000-eeeeeeeeeeee"})
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
	role, session, token := form.Get("RoleArn"), form.Get("RoleSessionName"), form.Get("WebIdentityToken")
	duration := 3600
	if v := form.Get("DurationSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 900 || n > 43200 {
			fail(http.StatusBadRequest, "ValidationError", "DurationSeconds must be 900 to 43200, not %q", v)
			return
		}
		duration = n
	}
	switch {
	case form.Get("Version") != "2011-06-15":
		fail(http.StatusBadRequest, "InvalidAction", "Version %q is not STS's 2011-06-15", form.Get("Version"))
		return
	case !sessionName.MatchString(session):
		fail(http.StatusBadRequest, "ValidationError", "1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]*", session)
		return
	case trust == nil || role != trust.RoleARN:
		fail(http.StatusForbidden, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
		return
	}
	claims, err := verify(token, trust, now)
	if err != nil {
		var e *apiError
		if errors.As(err, &e) {
			fail(e.Status, e.Code, "%s", e.Message)
		} else {
			fail(http.StatusBadRequest, "InvalidIdentityToken", "%v", err)
		}
		return
	}
	if !slices.Contains(trust.Subjects, claims.Sub) {
		// The trust policy's condition on the subject does not hold.
		fail(http.StatusForbidden, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
		return
	}
	key := "ASIA" + strings.ToUpper(randomHex(8))
	exp := now.Add(time.Duration(duration) * time.Second).UTC()
	s.mu.Lock()
	s.issued[key] = exp
	s.mu.Unlock()
	out := stsResponse{Xmlns: "https://sts.amazonaws.com/doc/2011-06-15/", Result: stsResult{
		Credentials: stsCredentials{AccessKeyID: key, SecretAccessKey: randomHex(20), SessionToken: randomHex(64), Expiration: exp.Format(time.RFC3339)},
		Subject:     claims.Sub,
		AssumedRole: stsAssumedRole{Arn: strings.Replace(strings.Replace(role, ":iam:", ":sts:", 1), ":role/", ":assumed-role/", 1) + "/" + session, ID: "AROA" + strings.ToUpper(randomHex(8)) + ":" + session},
		Audience:    claims.Aud,
		Provider:    strings.TrimPrefix(claims.Iss, "https://"),
	}, RequestID: "00000000-0000-4000-8000-dddddddddddd"}
	b, err := xml.Marshal(out)
	if err != nil {
		fail(http.StatusInternalServerError, "InternalFailure", "%v", err)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

// claims are the ID token's claims STS reads.
type claims struct {
	Iss string `json:"iss"`
	Aud string `json:"aud"`
	Sub string `json:"sub"`
	Azp string `json:"azp"`
	Exp int64  `json:"exp"`
	Iat int64  `json:"iat"`
}

// verify checks a JWT as STS checks a web identity token: three parts,
// RS256, a signature by the issuer's key of its kid, the issuer, the
// audience, and not expired.
func verify(token string, trust *Trust, now time.Time) (claims, error) {
	var c claims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, errorf("InvalidIdentityToken", "the web identity token is not a JWT")
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := decodePart(parts[0], &header); err != nil {
		return c, err
	}
	if err := decodePart(parts[1], &c); err != nil {
		return c, err
	}
	if header.Alg != "RS256" {
		return c, errorf("InvalidIdentityToken", "the token's alg is %q; STS accepts RS256 from this provider", header.Alg)
	}
	key, err := fetchKey(trust, header.Kid)
	if err != nil {
		return c, err
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return c, errorf("InvalidIdentityToken", "the token's signature is not base64url")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return c, errorf("InvalidIdentityToken", "the token's signature does not verify with the issuer's key %s", header.Kid)
	}
	switch {
	case c.Iss != trust.Issuer:
		return c, errorf("InvalidIdentityToken", "the token's issuer %q is not the role's identity provider %q", c.Iss, trust.Issuer)
	case c.Aud != trust.Audience:
		return c, errorf("InvalidIdentityToken", "Incorrect token audience")
	case now.Unix() >= c.Exp:
		return c, errorf("ExpiredTokenException", "Token expired: current date/time %d must be before the expiration date/time %d", now.Unix(), c.Exp)
	}
	return c, nil
}

func decodePart(part string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(part)
	if err != nil {
		return errorf("InvalidIdentityToken", "a part of the token is not base64url")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errorf("InvalidIdentityToken", "a part of the token is not JSON")
	}
	return nil
}

// fetchKey reads the issuer's JWKS and returns the RSA key of kid.
func fetchKey(trust *Trust, kid string) (*rsa.PublicKey, error) {
	hc := trust.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Get(trust.JWKSURL)
	if err != nil {
		return nil, errorf("IDPCommunicationError", "the identity provider's keys could not be read: %v", err)
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kid, Kty, N, E string } `json:"keys"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, errorf("IDPCommunicationError", "the identity provider's keys are not a JWKS: %v", err)
	}
	for _, k := range set.Keys {
		if k.Kid != kid || k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil {
			return nil, errorf("IDPCommunicationError", "key %s of the JWKS is not base64url", kid)
		}
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, nil
	}
	return nil, errorf("InvalidIdentityToken", "the token's key %q is not among the identity provider's keys", kid)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// The XML of STS's answers (awsquery: the result inside
// <ActionResult>, the members by their names).

type stsResponse struct {
	XMLName   xml.Name  `xml:"AssumeRoleWithWebIdentityResponse"`
	Xmlns     string    `xml:"xmlns,attr"`
	Result    stsResult `xml:"AssumeRoleWithWebIdentityResult"`
	RequestID string    `xml:"ResponseMetadata>RequestId"`
}

type stsResult struct {
	Credentials    stsCredentials `xml:"Credentials"`
	Subject        string         `xml:"SubjectFromWebIdentityToken"`
	AssumedRole    stsAssumedRole `xml:"AssumedRoleUser"`
	Audience       string         `xml:"Audience"`
	Provider       string         `xml:"Provider"`
	SourceIdentity string         `xml:"SourceIdentity,omitempty"`
}

type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type stsAssumedRole struct {
	Arn string `xml:"Arn"`
	ID  string `xml:"AssumedRoleId"`
}

type stsErrorResponse struct {
	XMLName   xml.Name    `xml:"ErrorResponse"`
	Error     stsErrorXML `xml:"Error"`
	RequestID string      `xml:"RequestId"`
}

type stsErrorXML struct {
	Type    string `xml:"Type"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}
