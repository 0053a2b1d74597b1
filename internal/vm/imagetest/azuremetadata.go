package imagetest

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// AzureMetadata stands in for Azure's instance metadata service (IMDS)
// on 169.254.169.254. Microsoft publishes no mock of it (there is none
// beside the SDK's fakes of Resource Manager, which do not cover IMDS),
// so this one is written from Microsoft's documentation of the service
// ("Azure Instance Metadata Service for virtual machines", learn.microsoft.com)
// and from what Debian's cloud-init asks of it (cloudinit/sources/azure/imds.py),
// with the paths and fields those read and no others:
//
//   - GET /metadata/instance?api-version=V[&extended=true]: the instance
//     document, {compute, network} (instanceDocument), as JSON;
//   - GET /metadata/instance/compute?api-version=V: its compute part;
//   - GET /metadata/instance/compute/userData?api-version=V&format=text:
//     the VM's userData, as set on the VM (base64, as Resource Manager
//     takes it and IMDS returns it), a leaf, so format=text only.
//
// It refuses as Azure documents: with 400 and {"error": …} a request
// without the header "Metadata: true", one that carries X-Forwarded-For
// or Forwarded (IMDS is for the VM itself, never through a proxy), one
// with no api-version or one it does not know, and a leaf asked without
// format=text; with 405 any method but GET; with 404 a path it does not
// serve. Every request is recorded, before anything is answered.
// SetUserData changes the userData, as the Azure provider's PATCH of the
// VM's properties.userData does: the next read answers the new one, with
// no reboot.
type AzureMetadata struct {
	// VMID is compute.vmId, the VM's unique id (a GUID, also its SMBIOS
	// system-uuid, as cloud-init reads it: the instance id); Name its
	// name; Location its region; Zone its availability zone ("" for
	// none).
	VMID, Name, Location, Zone string
	// SubscriptionID and ResourceGroup are where the VM is; VMSize its
	// size; AdminUsername and ComputerName its osProfile's.
	SubscriptionID, ResourceGroup, VMSize string
	AdminUsername, ComputerName           string
	// Tags are the VM's tags.
	Tags map[string]string
	// Private is the NIC's private address with its subnet's prefix,
	// Public its public IP, MAC the NIC's MAC address (12 hex digits, no
	// separators, as IMDS gives it).
	Private netip.Prefix
	Public  netip.Addr
	MAC     string

	mu       sync.Mutex
	userData string
	requests []Request
}

// azureAPIVersions are the api-versions Microsoft's documentation of
// IMDS lists as supported, and those cloud-init asks: another is 400.
var azureAPIVersions = []string{
	"2017-03-01", "2017-04-02", "2017-08-01", "2017-10-01", "2017-12-01", "2018-02-01", "2018-04-02", "2018-10-01",
	"2019-02-01", "2019-03-11", "2019-04-30", "2019-06-01", "2019-06-04", "2019-08-01", "2019-08-15", "2019-11-01",
	"2020-06-01", "2020-07-15", "2020-09-01", "2020-10-01", "2020-12-01", "2021-01-01", "2021-02-01", "2021-03-01",
	"2021-05-01", "2021-08-01", "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13", "2023-07-01", "2023-11-15",
}

// SetUserData sets the userData IMDS answers from now on: base64 of the
// user data, as the VM's properties.userData holds it.
func (m *AzureMetadata) SetUserData(b64 string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.userData = b64
}

// UserData is the userData IMDS answers now.
func (m *AzureMetadata) UserData() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.userData
}

// Requests returns every request so far.
func (m *AzureMetadata) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// azureCompute is the instance document's compute part, with the fields
// cloud-init (osProfile, userData, extended ppsType through the
// document) and the agent (vmId, name, location, zone) read, and those
// that place the VM.
type azureCompute struct {
	AzEnvironment     string         `json:"azEnvironment"`
	Location          string         `json:"location"`
	Name              string         `json:"name"`
	OSType            string         `json:"osType"`
	OSProfile         azureOSProfile `json:"osProfile"`
	ResourceGroupName string         `json:"resourceGroupName"`
	ResourceID        string         `json:"resourceId"`
	SubscriptionID    string         `json:"subscriptionId"`
	Tags              string         `json:"tags"`
	TagsList          []azureTag     `json:"tagsList"`
	UserData          string         `json:"userData"`
	VMID              string         `json:"vmId"`
	VMSize            string         `json:"vmSize"`
	Zone              string         `json:"zone"`
}

type azureOSProfile struct {
	AdminUsername                 string `json:"adminUsername"`
	ComputerName                  string `json:"computerName"`
	DisablePasswordAuthentication string `json:"disablePasswordAuthentication"`
}

type azureTag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type azureAddress struct {
	PrivateIPAddress string `json:"privateIpAddress"`
	PublicIPAddress  string `json:"publicIpAddress"`
}

type azureSubnet struct {
	Address string `json:"address"`
	Prefix  string `json:"prefix"`
}

type azureInterface struct {
	IPv4 struct {
		IPAddress []azureAddress `json:"ipAddress"`
		Subnet    []azureSubnet  `json:"subnet"`
	} `json:"ipv4"`
	IPv6 struct {
		IPAddress []azureAddress `json:"ipAddress"`
	} `json:"ipv6"`
	MACAddress string `json:"macAddress"`
}

func (m *AzureMetadata) compute() azureCompute {
	var tags []string
	list := []azureTag{}
	for _, k := range slices.Sorted(maps.Keys(m.Tags)) {
		tags = append(tags, k+":"+m.Tags[k])
		list = append(list, azureTag{Name: k, Value: m.Tags[k]})
	}
	return azureCompute{
		AzEnvironment: "AzurePublicCloud", Location: m.Location, Name: m.Name, OSType: "Linux",
		OSProfile:         azureOSProfile{AdminUsername: m.AdminUsername, ComputerName: m.ComputerName, DisablePasswordAuthentication: "true"},
		ResourceGroupName: m.ResourceGroup,
		ResourceID:        "/subscriptions/" + m.SubscriptionID + "/resourceGroups/" + m.ResourceGroup + "/providers/Microsoft.Compute/virtualMachines/" + m.Name,
		SubscriptionID:    m.SubscriptionID, Tags: strings.Join(tags, ";"), TagsList: list,
		UserData: m.userData, VMID: m.VMID, VMSize: m.VMSize, Zone: m.Zone,
	}
}

// document is /metadata/instance: compute, network (the VM's one NIC)
// and, asked with extended=true as cloud-init asks, extended.compute's
// ppsType (None: no pre-provisioned VM).
func (m *AzureMetadata) document(extended bool) map[string]any {
	var nic azureInterface
	nic.IPv4.IPAddress = []azureAddress{{PrivateIPAddress: m.Private.Addr().String(), PublicIPAddress: m.Public.String()}}
	nic.IPv4.Subnet = []azureSubnet{{Address: m.Private.Masked().Addr().String(), Prefix: strconv.Itoa(m.Private.Bits())}}
	nic.IPv6.IPAddress = []azureAddress{}
	nic.MACAddress = m.MAC
	doc := map[string]any{"compute": m.compute(), "network": map[string]any{"interface": []azureInterface{nic}}}
	if extended {
		doc["extended"] = map[string]any{"compute": map[string]string{"ppsType": "None"}}
	}
	return doc
}

func (m *AzureMetadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, Request{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method,
		URI: r.RequestURI, Flavor: r.Header.Get("Metadata"), Forwarded: r.Header.Get("X-Forwarded-For") + r.Header.Get("Forwarded")})
	bad := func(msg string) { azureError(w, http.StatusBadRequest, msg) }
	q := r.URL.Query()
	leaf := r.URL.Path == "/metadata/instance/compute/userData"
	switch {
	case r.Method != http.MethodGet:
		azureError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	case r.Header.Get("X-Forwarded-For") != "" || r.Header.Get("Forwarded") != "":
		bad("Bad request. Requests with an X-Forwarded-For header are refused")
		return
	case r.Header.Get("Metadata") != "true":
		bad("Bad request. Required metadata header not specified")
		return
	case !slices.Contains(azureAPIVersions, q.Get("api-version")):
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": "Bad request. api-version is invalid or was not specified in the request. For more information refer to aka.ms/azureimds",
			"newest-versions": azureAPIVersions[len(azureAPIVersions)-3:]})
		return
	case leaf && q.Get("format") != "text":
		bad("Bad request. Leaf nodes are only available in text format. Please use format=text")
		return
	case leaf && q.Get("api-version") < "2021-01-01":
		// userData came with 2021-01-01.
		azureError(w, http.StatusNotFound, "Not found")
		return
	}
	switch r.URL.Path {
	case "/metadata/instance":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(m.document(q.Get("extended") == "true"))
	case "/metadata/instance/compute":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(m.compute())
	case "/metadata/instance/compute/userData":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, m.userData)
	default:
		azureError(w, http.StatusNotFound, "Not found")
	}
}

func azureError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// AzureWireServer stands in for Azure's wire server (168.63.129.16),
// where cloud-init's Azure datasource reports that provisioning is
// done, as Microsoft's Linux agent would: GET /machine/?comp=goalstate
// answers the VM's goal state (the three elements cloud-init reads:
// Incarnation, Container/ContainerId, and RoleInstance/InstanceId), and
// POST /machine?comp=health takes a health report, which it records.
// Every request is recorded too, before anything is answered.
// It is no picture of the wire server beyond that: Microsoft documents
// no more of its protocol than its address, and the test needs no more
// of it than to let cloud-init end its provisioning, as on Azure, and
// see that it said Ready.
type AzureWireServer struct {
	// ContainerID and InstanceID are the goal state's.
	ContainerID, InstanceID string

	mu       sync.Mutex
	reports  []string
	requests []Request
}

// Requests returns every request so far.
func (s *AzureWireServer) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WireServerAddr is the wire server's address on every Azure VM.
var WireServerAddr = netip.MustParseAddr("168.63.129.16")

// Health is the health state each report said ("Ready", "NotReady"),
// in order.
func (s *AzureWireServer) Health() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reports...)
}

func (s *AzureWireServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, Request{Time: time.Now(), RemoteAddr: r.RemoteAddr, Method: r.Method,
		URI: r.RequestURI, Forwarded: r.Header.Get("X-Forwarded-For")})
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/machine" && r.URL.Query().Get("comp") == "goalstate":
		w.Header().Set("Content-Type", "text/xml; charset=utf-8")
		io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?>
<GoalState xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="goalstate10.xsd" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <Version>2012-11-30</Version>
  <Incarnation>1</Incarnation>
  <Machine><ExpectedState>Started</ExpectedState></Machine>
  <Container>
    <ContainerId>`+s.ContainerID+`</ContainerId>
    <RoleInstanceList>
      <RoleInstance>
        <InstanceId>`+s.InstanceID+`</InstanceId>
        <State>Started</State>
      </RoleInstance>
    </RoleInstanceList>
  </Container>
</GoalState>
`)
	case r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == "/machine" && r.URL.Query().Get("comp") == "health":
		var report struct {
			State string `xml:"Container>RoleInstanceList>Role>Health>State"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := xml.Unmarshal(body, &report); err != nil {
			http.Error(w, "not a health report", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reports = append(s.reports, report.State)
		s.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}
