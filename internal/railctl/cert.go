package railctl

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// certLifetime is the validity of the CA and the serving certificate;
// both are made anew at every start.
const certLifetime = 5 * 365 * 24 * time.Hour

// Certs are the webhook's self-signed CA (its PEM goes into the
// MutatingWebhookConfiguration's caBundle) and the serving certificate it
// signed for the Service's DNS names. The keys never leave the process.
type Certs struct {
	CAPEM   []byte
	Serving tls.Certificate
}

// ServiceDNSNames are the names the API server may dial a Service by.
func ServiceDNSNames(service, namespace string) []string {
	return []string{service, service + "." + namespace, service + "." + namespace + ".svc", service + "." + namespace + ".svc.cluster.local"}
}

// NewCerts makes a CA and a serving certificate for dnsNames, valid from
// now.
func NewCerts(now time.Time, dnsNames []string) (Certs, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, fmt.Errorf("CA key: %w", err)
	}
	ca := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: ManagedBy + " CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLifetime),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Certs{}, fmt.Errorf("CA certificate: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Certs{}, fmt.Errorf("serving key: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(certLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return Certs{}, fmt.Errorf("serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Certs{}, fmt.Errorf("serving key: %w", err)
	}
	pair, err := tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return Certs{}, fmt.Errorf("serving key pair: %w", err)
	}
	return Certs{CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), Serving: pair}, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// EnsureCABundle sets caBundle of every webhook of the
// MutatingWebhookConfiguration name to caPEM, with a JSON patch (the
// controller may only get and patch that one object), unless it already
// is. It reports whether it patched.
func EnsureCABundle(ctx context.Context, cs kubernetes.Interface, name string, caPEM []byte) (bool, error) {
	cfg, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", name, err)
	}
	var ops []PatchOp
	for i, w := range cfg.Webhooks {
		if string(w.ClientConfig.CABundle) != string(caPEM) {
			ops = append(ops, PatchOp{Op: "add", Path: fmt.Sprintf("/webhooks/%d/clientConfig/caBundle", i), Value: caPEM})
		}
	}
	if len(ops) == 0 {
		return false, nil
	}
	// The webhooks must still be the ones read.
	ops = append([]PatchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: cfg.ResourceVersion}}, ops...)
	b, err := json.Marshal(ops)
	if err != nil {
		return false, err
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, name, types.JSONPatchType, b, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("patching the caBundle of MutatingWebhookConfiguration %s: %w", name, err)
	}
	return true, nil
}
