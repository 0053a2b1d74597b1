package aws

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/egress-proxies/egress/internal/provider"
)

// kinds maps EC2's error codes (the EC2 API reference's "Error codes
// for the Amazon EC2 API") to the contract's kinds: what the reconciler
// should do about each. A code not here is classified by its HTTP
// status.
var kinds = map[string]provider.Kind{
	"InvalidInstanceID.NotFound":    provider.KindNotFound,
	"InvalidAllocationID.NotFound":  provider.KindNotFound,
	"InvalidAssociationID.NotFound": provider.KindNotFound,
	// The ClientToken's request asked for something else: Create reads
	// it as "this attempt made an instance already" and finds it.
	"IdempotentParameterMismatch": provider.KindAlreadyExists,
	// No room for the type in the zone right now, or a zone that does
	// not offer the type: another zone may have it.
	"InsufficientInstanceCapacity": provider.KindCapacity,
	"Unsupported":                  provider.KindCapacity,
	// The account's limits: raised by asking AWS (Service Quotas).
	"InstanceLimitExceeded": provider.KindQuota,
	"VcpuLimitExceeded":     provider.KindQuota,
	"AddressLimitExceeded":  provider.KindQuota,
	// Too many requests: the reconciler waits (requestLimitWait).
	"RequestLimitExceeded": provider.KindRateLimited,
	"Throttling":           provider.KindRateLimited,
	// A fault of EC2's, a state on its way (an instance not running yet,
	// an Elastic IP still on the instance before), an account still
	// being verified, a request signed with a clock or credentials gone
	// stale: try again.
	"InternalError":                 provider.KindTransient,
	"InternalFailure":               provider.KindTransient,
	"Unavailable":                   provider.KindTransient,
	"ServiceUnavailable":            provider.KindTransient,
	"InsufficientAddressCapacity":   provider.KindTransient,
	"IncorrectInstanceState":        provider.KindTransient,
	"IncorrectState":                provider.KindTransient,
	"Resource.AlreadyAssociated":    provider.KindTransient,
	"InvalidIPAddress.InUse":        provider.KindTransient,
	"PendingVerification":           provider.KindTransient,
	"RequestExpired":                provider.KindTransient,
	"DependencyViolation":           provider.KindTransient,
	"InvalidInstanceID.Unavailable": provider.KindTransient,
	// The request can never pass as it is: a field, an image, a type, a
	// security group, a permission (the role's policy), a region the
	// account has not opted in to.
	"InvalidParameterValue":       provider.KindPermanent,
	"InvalidParameterCombination": provider.KindPermanent,
	"InvalidParameter":            provider.KindPermanent,
	"MissingParameter":            provider.KindPermanent,
	"InvalidAMIID.NotFound":       provider.KindPermanent,
	"InvalidAMIID.Malformed":      provider.KindPermanent,
	"InvalidAMIID.Unavailable":    provider.KindPermanent,
	"InvalidInstanceID.Malformed": provider.KindPermanent,
	"InvalidGroup.NotFound":       provider.KindPermanent,
	"VPCIdNotSpecified":           provider.KindPermanent,
	"UnauthorizedOperation":       provider.KindPermanent,
	"AuthFailure":                 provider.KindPermanent,
	"OptInRequired":               provider.KindPermanent,
	"Blocked":                     provider.KindPermanent,
	"InvalidAction":               provider.KindPermanent,
}

// errorCode is the EC2 error code of err, or "".
func errorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// fromSTS reports whether err came from STS: the exchange of the
// function's identity for the role's credentials failed.
func fromSTS(err error) bool {
	var op *smithy.OperationError
	for e := err; errors.As(e, &op); e = op.Err {
		if op.Service() == "STS" {
			return true
		}
	}
	return false
}

// classify reads the kind of an error the SDK returned.
func classify(err error) provider.Kind {
	if err == nil {
		return ""
	}
	if fromSTS(err) {
		// The role's trust or the function's identity is wrong, or STS
		// is down: nothing a proxy can change, and nothing to fail a
		// proxy for; once the operator fixes it, proxies go on.
		return provider.KindTransient
	}
	code := errorCode(err)
	if code == "" {
		// No answer from EC2 (a connection, a context), or one without an
		// error document: worth another try.
		return provider.KindTransient
	}
	if k, ok := kinds[code]; ok {
		return k
	}
	var resp *smithyhttp.ResponseError
	if errors.As(err, &resp) && resp.HTTPStatusCode() < http.StatusInternalServerError {
		return provider.KindPermanent
	}
	return provider.KindTransient
}

// requestLimitWait is the wait after RequestLimitExceeded. EC2 says
// nothing of when to try again, and which bucket ran out; its buckets
// refill continuously ("Request throttling for the Amazon EC2 API",
// https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html),
// and the slowest of the provider's, RunInstances's resource bucket at 2
// instances a second, has a token back within half a second (the
// mutating actions' at 5 a second within 200 ms, the Describes' at 20
// within 50 ms).
const requestLimitWait = time.Second / 2

// wrap classifies err as an error of op on target; a rate limit carries
// the wait for a token (requestLimitWait).
func (p *Provider) wrap(op, target string, err error) error {
	if err == nil {
		return nil
	}
	kind := classify(err)
	e := provider.NewError(kind, op, target, err)
	switch {
	case kind == provider.KindNotFound:
		e.Err = fmt.Errorf("%w: %w", provider.ErrNotFound, err)
	case kind == provider.KindRateLimited:
		e.RetryAfter = requestLimitWait
		p.cfg.Log.Warn("aws request limit reached; the call waits", slog.String("op", op), slog.String("target", target), slog.Duration("retryAfter", e.RetryAfter))
	case fromSTS(err):
		e.Err = fmt.Errorf("the AWS role's credentials could not be had from STS (AssumeRoleWithWebIdentity: the role's trust of the functions' Google identity, AWS_ROLE_ARN, AWS_AUDIENCE): %w", err)
	}
	return e
}
