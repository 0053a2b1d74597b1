package deploy

// The IAM table: every Google API method the functions call, with the
// permissions Google documents for it, and how each Go client call of the
// code names those methods. deploy/terraform/iam.tf grants each function's
// account exactly what its calls need; the deploy tests find the calls in
// the code (calls_test.go) and hold the two to this table, so a new call
// is a line here and a permission in iam.tf, and a call or a permission
// missing from either fails a test.
//
// It lives here, beside the Terraform it governs, rather than in the code
// that calls Google: nothing at run time reads it, and the code must not
// carry a second account of what it calls.

// API is a Google API method and the IAM permissions a call of it needs.
type API struct {
	// Method is the method as Google's REST reference names it
	// (compute.instances.insert), with the case of it this code uses when
	// the documentation gives permissions by case (a commit's writes).
	Method string
	// Permissions are all the caller needs for the call as this code
	// makes it.
	Permissions []string
	// Doc is the page of Google's documentation the permissions are from.
	Doc string
}

// Google's documentation the table cites.
const (
	computeRef = "https://cloud.google.com/compute/docs/reference/rest/v1/" // + resource/method: each page's "IAM Permissions"
	// The permissions of instances.insert beyond compute.instances.create
	// depend on the instance's fields: the "Required permissions" of
	// creating a VM that runs as a user-managed service account.
	computeCreateVM = "https://cloud.google.com/compute/docs/access/create-enable-service-accounts-for-instances"
	// Firestore's "Required permissions for API methods".
	firestoreIAM = "https://cloud.google.com/firestore/native/docs/security/iam"
	pubsubIAM    = "https://cloud.google.com/pubsub/docs/access-control"
	secretsIAM   = "https://cloud.google.com/secret-manager/docs/access-control"
	kmsIAM       = "https://cloud.google.com/kms/docs/reference/permissions-and-roles"
	loggingIAM   = "https://cloud.google.com/logging/docs/access-control"
)

// APIs are the Google API methods the functions' code may call. Compute's
// come from the REST reference of each method (the "IAM Permissions" of
// the page, which public role datasets such as iann0036/iam-dataset's
// gcp/map.json record as well); one method may need more than its own
// permission when the request sets more (instances.insert).
var APIs = []API{
	// Reconcile: the VM and the address of a proxy.
	{"compute.instances.insert", []string{
		"compute.instances.create",
		"compute.disks.create",              // the boot disk, made from initializeParams
		"compute.images.useReadOnly",        // an image of the deployment's own project, if GCP_ALLOWED_IMAGES allows one (public images need none)
		"compute.subnetworks.use",           // the interface's subnetwork (a VPC network, auto or custom mode)
		"compute.subnetworks.useExternalIp", // its ONE_TO_ONE_NAT access config
		"compute.addresses.use",             // a Static proxy's reserved address as natIP
		"compute.instances.setMetadata",     // startup-script and the call-home attributes
		"compute.instances.setTags",         // the firewall's network tag
		"compute.instances.setLabels",       // the managed and uid labels
		"compute.instances.setServiceAccount",
		"iam.serviceAccounts.actAs", // on proxy-vm only: the resource-level binding
	}, computeCreateVM},
	{"compute.instances.get", []string{"compute.instances.get"}, computeRef + "instances/get"},
	// A live reconfiguration (gcp's Reconfigure): the engine's
	// configuration and the call-home items, and the uid label of a
	// claimed warm VM. roles/compute.instanceAdmin.v1 holds both
	// (iann0036/iam-dataset gcp/roles/compute.instanceAdmin.v1.json); the
	// reconcile role holds them already for the insert.
	{"compute.instances.setMetadata", []string{"compute.instances.setMetadata"}, computeRef + "instances/setMetadata"},
	{"compute.instances.setLabels", []string{"compute.instances.setLabels"}, computeRef + "instances/setLabels"},
	{"compute.instances.delete", []string{"compute.instances.delete"}, computeRef + "instances/delete"},
	{"compute.instances.aggregatedList", []string{"compute.instances.list"}, computeRef + "instances/aggregatedList"},
	{"compute.instances.getGuestAttributes", []string{"compute.instances.getGuestAttributes"}, computeRef + "instances/getGuestAttributes"},
	{"compute.instances.getSerialPortOutput", []string{"compute.instances.getSerialPortOutput"}, computeRef + "instances/getSerialPortOutput"},
	// An EXTERNAL address: compute.addresses.createInternal and
	// deleteInternal, which roles/compute.instanceAdmin.v1 holds, are for
	// INTERNAL ones only; that role holds neither create nor delete
	// (iann0036/iam-dataset gcp/roles/compute.instanceAdmin.v1.json).
	{"compute.addresses.insert", []string{"compute.addresses.create"}, computeRef + "addresses/insert"},
	{"compute.addresses.get", []string{"compute.addresses.get"}, computeRef + "addresses/get"},
	{"compute.addresses.delete", []string{"compute.addresses.delete"}, computeRef + "addresses/delete"},
	{"compute.addresses.aggregatedList", []string{"compute.addresses.list"}, computeRef + "addresses/aggregatedList"},
	{"compute.zoneOperations.list", []string{"compute.zoneOperations.list"}, computeRef + "zoneOperations/list"},
	{"compute.regions.get", []string{"compute.regions.get"}, computeRef + "regions/get"},

	// Firestore. Beginning and rolling back a transaction is
	// datastore.databases.get in Firestore (the page's note); a commit
	// needs what each of its writes needs, which the page gives by the
	// write's precondition: create is an update with exists=false, set one
	// with none, update one with exists=true.
	{"firestore.documents.batchGet", []string{"datastore.entities.get"}, firestoreIAM},
	{"firestore.documents.runQuery", []string{"datastore.entities.get", "datastore.entities.list"}, firestoreIAM},
	// A count (placement's of an account's proxies, store.CountPlaced)
	// reads the entities it counts as a query does.
	{"firestore.documents.runAggregationQuery", []string{"datastore.entities.get", "datastore.entities.list"}, firestoreIAM},
	{"firestore.documents.beginTransaction", []string{"datastore.databases.get"}, firestoreIAM},
	{"firestore.documents.rollback", []string{"datastore.databases.get"}, firestoreIAM},
	{"firestore.documents.commit: create", []string{"datastore.entities.create"}, firestoreIAM},
	// Also with the code's other precondition, an update time, which
	// cannot create a document either.
	{"firestore.documents.commit: update", []string{"datastore.entities.update"}, firestoreIAM},
	{"firestore.documents.commit: set", []string{"datastore.entities.create", "datastore.entities.update"}, firestoreIAM},
	{"firestore.documents.commit: delete", []string{"datastore.entities.delete"}, firestoreIAM},

	// Pub/Sub: reconcile requests on proxy-reconcile, granted on that
	// topic only.
	{"pubsub.topics.publish", []string{"pubsub.topics.publish"}, pubsubIAM},

	// Secret Manager: a spec's cloudInitSecret, granted under
	// CLOUD_INIT_SECRET_PREFIX only.
	{"secretmanager.versions.access", []string{"secretmanager.versions.access"}, secretsIAM},

	// Cloud Logging: the VMs' access lines, which Reconcile writes to the
	// log egress-proxy-access (internal/accesslog); the VMs write none.
	{"logging.entries.write", []string{"logging.logEntries.create"}, loggingIAM},

	// Cloud KMS: the key that wraps the credentials' keyset
	// (internal/sealing), granted on that key only.
	{"cloudkms.projects.locations.keyRings.cryptoKeys.encrypt", []string{"cloudkms.cryptoKeyVersions.useToEncrypt"}, kmsIAM},
	{"cloudkms.projects.locations.keyRings.cryptoKeys.decrypt", []string{"cloudkms.cryptoKeyVersions.useToDecrypt"}, kmsIAM},
}

// ClientPackages are the Google client packages whose calls the deploy
// tests follow, by the short name ClientMethods's keys use. A call into
// any of them must be accounted for: by ClientMethods, or, for Compute's
// generated REST clients, by its name (InstancesClient.Insert is
// compute.instances.insert).
var ClientPackages = map[string]string{
	"cloud.google.com/go/compute/apiv1":       "compute",
	"cloud.google.com/go/firestore":           "firestore",
	"cloud.google.com/go/pubsub/v2":           "pubsub",
	"cloud.google.com/go/secretmanager/apiv1": "secretmanager",
	"google.golang.org/api/logging/v2":        "logging",
	// Tink's Cloud KMS extension, whose AEAD calls KMS's REST API.
	"github.com/tink-crypto/tink-go-gcpkms/v2/integration/gcpkms": "gcpkms",
}

// ClientMethods are the API methods each client function the code calls
// sends, as the client library sends them; nil for one that sends none
// of its own (a constructor, a query builder, an iterator of a call
// already counted, an option, an error's text).
var ClientMethods = map[string][]string{
	// Firestore (cloud.google.com/go/firestore): a transaction is a
	// beginTransaction, its reads, and one commit of its writes, or a
	// rollback; a write outside one is a commit of its own.
	"firestore.(*Client).RunTransaction": {"firestore.documents.beginTransaction", "firestore.documents.rollback"},
	"firestore.(*DocumentRef).Get":       {"firestore.documents.batchGet"},
	"firestore.(*Transaction).Get":       {"firestore.documents.batchGet"},
	"firestore.(*Transaction).GetAll":    {"firestore.documents.batchGet"},
	"firestore.(Query).Documents":        {"firestore.documents.runQuery"},
	"firestore.(*AggregationQuery).Get":  {"firestore.documents.runAggregationQuery"},
	"firestore.(*Transaction).Documents": {"firestore.documents.runQuery"},
	"firestore.(*DocumentRef).Create":    {"firestore.documents.commit: create"},
	"firestore.(*Transaction).Create":    {"firestore.documents.commit: create"},
	"firestore.(*DocumentRef).Update":    {"firestore.documents.commit: update"},
	"firestore.(*Transaction).Update":    {"firestore.documents.commit: update"},
	"firestore.(*DocumentRef).Set":       {"firestore.documents.commit: set"},
	"firestore.(*Transaction).Set":       {"firestore.documents.commit: set"},
	"firestore.(*DocumentRef).Delete":    {"firestore.documents.commit: delete"},
	"firestore.(*Transaction).Delete":    {"firestore.documents.commit: delete"},

	"firestore.NewClient":                      nil,
	"firestore.(*Client).Close":                nil,
	"firestore.(*Client).Collection":           nil,
	"firestore.(*Client).CollectionGroup":      nil,
	"firestore.(*CollectionRef).Doc":           nil,
	"firestore.(*DocumentRef).Collection":      nil,
	"firestore.(Query).Where":                  nil,
	"firestore.(Query).WherePath":              nil,
	"firestore.(*Query).NewAggregationQuery":   nil,
	"firestore.(*AggregationQuery).WithCount":  nil,
	"firestore.(Query).OrderBy":                nil,
	"firestore.(Query).Limit":                  nil,
	"firestore.(Query).Select":                 nil,
	"firestore.(Query).SelectPaths":            nil,
	"firestore.(Query).StartAfter":             nil,
	"firestore.(*DocumentIterator).Next":       nil, // the pages of runQuery
	"firestore.(*DocumentIterator).GetAll":     nil,
	"firestore.(*DocumentIterator).Stop":       nil,
	"firestore.(*DocumentSnapshot).DataTo":     nil,
	"firestore.(*DocumentSnapshot).DataAt":     nil,
	"firestore.(*DocumentSnapshot).DataAtPath": nil,
	"firestore.(*DocumentSnapshot).Exists":     nil,
	"firestore.(*CommitResponse).CommitTime":   nil,
	"firestore.(*FieldNotFoundError).Error":    nil,
	"firestore.MaxAttempts":                    nil,
	"firestore.WithCommitResponseTo":           nil,
	"firestore.LastUpdateTime":                 nil,
	"firestore.Increment":                      nil,

	// Pub/Sub (cloud.google.com/go/pubsub/v2): Publish sends; Stop only
	// flushes what Publish queued.
	"pubsub.(*Publisher).Publish":        {"pubsub.topics.publish"},
	"pubsub.NewClient":                   nil,
	"pubsub.(*Client).Close":             nil,
	"pubsub.(*Client).Publisher":         nil,
	"pubsub.(*Publisher).Stop":           nil,
	"pubsub.(ErrPublishingPaused).Error": nil,

	// Secret Manager (cloud.google.com/go/secretmanager/apiv1).
	"secretmanager.(*Client).AccessSecretVersion": {"secretmanager.versions.access"},
	"secretmanager.NewClient":                     nil,
	"secretmanager.(*Client).Close":               nil,

	// Cloud Logging (google.golang.org/api/logging/v2).
	"logging.(*EntriesWriteCall).Do":      {"logging.entries.write"},
	"logging.(*EntriesWriteCall).Context": nil,
	"logging.(*EntriesService).Write":     nil,
	"logging.NewService":                  nil,

	// Tink's Cloud KMS extension: the AEAD GetAEAD returns (an unexported
	// type, called through tink.AEAD, which the analysis does not follow
	// into it) encrypts and decrypts with the key, KMS's REST
	// cryptoKeys.encrypt and decrypt.
	"gcpkms.(*Client).GetAEAD":    {"cloudkms.projects.locations.keyRings.cryptoKeys.encrypt", "cloudkms.projects.locations.keyRings.cryptoKeys.decrypt"},
	"gcpkms.NewClientWithOptions": nil,

	// Compute (cloud.google.com/go/compute/apiv1): the clients' methods
	// name their API methods; these send none of their own.
	"compute.NewInstancesRESTClient":                  nil,
	"compute.NewAddressesRESTClient":                  nil,
	"compute.NewZoneOperationsRESTClient":             nil,
	"compute.NewRegionsRESTClient":                    nil,
	"compute.(*InstancesClient).Close":                nil,
	"compute.(*AddressesClient).Close":                nil,
	"compute.(*ZoneOperationsClient).Close":           nil,
	"compute.(*RegionsClient).Close":                  nil,
	"compute.(*InstancesScopedListPairIterator).Next": nil, // the pages of aggregatedList
	"compute.(*AddressesScopedListPairIterator).Next": nil,
	"compute.(*OperationIterator).Next":               nil, // the pages of zoneOperations.list
}

// Granted is how a permission that no custom role holds reaches an
// account: a predefined role bound on one resource only (iam.tf), never on
// the project. The roles' contents are Google's
// (https://cloud.google.com/iam/docs/roles-permissions; recorded as well in
// iann0036/iam-dataset gcp/roles/*.json).
type Granted struct {
	Role        string
	On          string // the resource, as iam.tf names it
	Permissions []string
}

// ResourceGrants are the permissions the code needs that iam.tf grants on
// one resource rather than in a function's custom role.
var ResourceGrants = map[string]Granted{
	"pubsub.topics.publish": {"roles/pubsub.publisher", "google_pubsub_topic.reconcile",
		[]string{"pubsub.topics.publish"}},
	"iam.serviceAccounts.actAs": {"roles/iam.serviceAccountUser", "google_service_account.proxy_vm",
		[]string{"iam.serviceAccounts.actAs", "iam.serviceAccounts.get", "iam.serviceAccounts.list", "resourcemanager.projects.get", "resourcemanager.projects.list"}},
	// On the credentials' key only (kms.tf).
	"cloudkms.cryptoKeyVersions.useToEncrypt": {"roles/cloudkms.cryptoKeyEncrypterDecrypter", "google_kms_crypto_key.credentials",
		[]string{"cloudkms.cryptoKeyVersions.useToDecrypt", "cloudkms.cryptoKeyVersions.useToEncrypt", "cloudkms.locations.get", "cloudkms.locations.list", "resourcemanager.projects.get"}},
	"cloudkms.cryptoKeyVersions.useToDecrypt": {"roles/cloudkms.cryptoKeyEncrypterDecrypter", "google_kms_crypto_key.credentials",
		[]string{"cloudkms.cryptoKeyVersions.useToDecrypt", "cloudkms.cryptoKeyVersions.useToEncrypt", "cloudkms.locations.get", "cloudkms.locations.list", "resourcemanager.projects.get"}},
	// On the project, but conditioned on the secrets' names
	// (CLOUD_INIT_SECRET_PREFIX): TestSecretAccessIsConditionedOnThePrefix.
	"secretmanager.versions.access": {"roles/secretmanager.secretAccessor", "secrets under CLOUD_INIT_SECRET_PREFIX",
		[]string{"resourcemanager.projects.get", "resourcemanager.projects.list", "secretmanager.versions.access"}},
}

// ProxyVM is what the proxy VMs' own account (proxy-vm) needs: its calls
// are not Go but the startup script's (internal/bootstrap) and Google's
// guest agent's, so they are listed here by hand, each with what makes it.
var ProxyVM = []struct {
	Method, By string
	Granted
}{
	// proxy-callhome, not proxy-reconcile: a VM's message must name a
	// uid, which only that topic's subscription checks (internal/queue).
	{"pubsub.topics.publish", "the startup script's call-home (POST …/topics/proxy-callhome:publish)",
		Granted{"roles/pubsub.publisher", "google_pubsub_topic.callhome", []string{"pubsub.topics.publish"}}},
	// Conditioned on the objects named egress-proxy-*: the engine binary
	// and nothing else of the functions' source bucket.
	{"storage.objects.get", "the startup script's download of the proxy engine (GET …/b/BUCKET/o/egress-proxy-SHA256?alt=media)",
		Granted{"roles/storage.objectViewer", "google_storage_bucket.source", []string{"storage.objects.get", "storage.objects.list"}}},
	// No log writer and no metric writer: root on one VM could write
	// entries that look like the functions' (an audit line, a "gc
	// refused" that fires an alert, the inputs of the log-based metrics).
	// What a VM reports (its access lines) travels in its call-home, and
	// Reconcile writes it, labelled with the VM's verified identity
	// (internal/callhome). TestVMsWriteNoLogsOrMetrics.
}
