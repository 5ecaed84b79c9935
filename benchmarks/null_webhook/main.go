// Command null_webhook is the baseline for benchmarks/webhook_apiserver.py: a
// validating admission webhook that admits everything and costs next to
// nothing (Go's net/http on every core, no check, no lookup). Registered in
// place of `ownergc webhook`, the apiserver's own histogram of its webhook
// calls then shows what the apiserver's side of a call costs on the machine,
// which no webhook can go below (docs/performance.md, "Admission webhook").
//
//	go run benchmarks/null_webhook/main.go -cert tls.crt -key tls.key -addr 127.0.0.1:19443
//
// -h2 offers HTTP/2 (kube-apiserver then multiplexes its calls on one
// connection); by default only HTTP/1.1, as `ownergc webhook` serves.
package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"log"
	"net/http"
)

type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID string `json:"uid"`
	} `json:"request,omitempty"`
	Response *answer `json:"response,omitempty"`
}

type answer struct {
	UID     string `json:"uid"`
	Allowed bool   `json:"allowed"`
}

func validate(w http.ResponseWriter, r *http.Request) {
	var in review
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	out := review{APIVersion: in.APIVersion, Kind: in.Kind, Response: &answer{UID: in.Request.UID, Allowed: true}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&out)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:19443", "listen address")
	cert := flag.String("cert", "tls.crt", "serving certificate (PEM)")
	key := flag.String("key", "tls.key", "its key (PEM)")
	h2 := flag.Bool("h2", false, "also offer HTTP/2")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", validate)
	srv := &http.Server{Addr: *addr, Handler: mux}
	if !*h2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	log.Fatal(srv.ListenAndServeTLS(*cert, *key))
}
