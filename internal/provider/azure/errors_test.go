package azure

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/egress-proxies/egress/internal/provider"
)

// TestClassify: ARM's codes, statuses and messages onto the contract's
// kinds, and the wait of a throttled answer.
func TestClassify(t *testing.T) {
	type row struct {
		Kind provider.Kind
		Wait time.Duration
	}
	for _, tc := range []struct {
		status        int
		code, message string
		header        map[string]string
		want          row
	}{
		{404, "ResourceNotFound", "", nil, row{provider.KindNotFound, 0}},
		{404, "", "", nil, row{provider.KindNotFound, 0}},
		{409, "SkuNotAvailable", "The requested VM size is currently not available in location westeurope zones 1", nil, row{provider.KindCapacity, 0}},
		{200, "AllocationFailed", "", nil, row{provider.KindCapacity, 0}},
		{409, "ZonalAllocationFailed", "", nil, row{provider.KindCapacity, 0}},
		{409, "OverconstrainedZonalAllocationRequest", "", nil, row{provider.KindCapacity, 0}},
		{409, "OperationNotAllowed", "Operation could not be completed as it results in exceeding approved Total Regional Cores quota", nil, row{provider.KindQuota, 0}},
		{409, "OperationNotAllowed", "The operation is not allowed", nil, row{provider.KindPermanent, 0}},
		{400, "PublicIPCountLimitReached", "", nil, row{provider.KindQuota, 0}},
		{429, "SubscriptionRequestsThrottled", "", map[string]string{"Retry-After": "17"}, row{provider.KindRateLimited, 17 * time.Second}},
		{429, "", "", map[string]string{"x-ms-retry-after-ms": "1500"}, row{provider.KindRateLimited, 1500 * time.Millisecond}},
		{409, "AnotherOperationInProgress", "", nil, row{provider.KindTransient, 0}},
		{409, "SomethingElse", "", nil, row{provider.KindTransient, 0}},
		{412, "PreconditionFailed", "", nil, row{provider.KindAlreadyExists, 0}},
		{403, "AuthorizationFailed", "does not have authorization to perform action 'Microsoft.Compute/virtualMachines/write'", nil, row{provider.KindPermanent, 0}},
		{400, "InvalidParameter", "", nil, row{provider.KindPermanent, 0}},
		{500, "InternalServerError", "", nil, row{provider.KindTransient, 0}},
		{503, "", "", nil, row{provider.KindTransient, 0}},
	} {
		req, _ := http.NewRequest(http.MethodPut, "https://management.azure.com/x", nil)
		resp := armError(req, tc.status, tc.code, tc.message, tc.header)
		err := &azcore.ResponseError{ErrorCode: tc.code, StatusCode: tc.status, RawResponse: resp}
		d, _ := detailOf(err)
		got := row{classify(err), d.retryAfter}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%d %s %q (-want +got):\n%s", tc.status, tc.code, tc.message, diff)
		}
	}
	if k := classify(errors.New("dial tcp: connection refused")); k != provider.KindTransient {
		t.Errorf("no answer from ARM: %q, want transient", k)
	}
}
