module k8s.io/sample-apiserver

go 1.26.0
