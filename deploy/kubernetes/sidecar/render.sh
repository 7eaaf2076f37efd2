#!/bin/sh
# Writes this pod's controller.properties and proxy.properties: the templates above with the per-pod
# values filled in, followed by the secret fragments. The output directories are in-memory emptyDirs.
set -eu
: "${POD_NAME:?POD_NAME must be set (downward API)}"
ordinal="${POD_NAME##*-}"
case "$ordinal" in
  '' | *[!0-9]*) echo "render.sh: no ordinal at the end of POD_NAME=$POD_NAME" >&2; exit 1 ;;
esac
umask 027
render() { # template fragment output
  sed -e "s/@NODE_ID@/$ordinal/g" -e "s/@PROXY_NODE_ID@/$((1000 + ordinal))/g" -e "s/@POD_NAME@/$POD_NAME/g" "$1" > "$3.tmp"
  printf '\n# from the Secret\n' >> "$3.tmp"
  cat "$2" >> "$3.tmp"
  mv "$3.tmp" "$3"
}
render "${TEMPLATE_DIR:-/templates}/controller.properties" "${KAFKA_SECRET_DIR:-/secrets/kafka}/controller-secrets.properties" "${KAFKA_OUT_DIR:-/rendered/kafka}/controller.properties"
render "${TEMPLATE_DIR:-/templates}/proxy.properties" "${PROXY_SECRET_DIR:-/secrets/proxy}/proxy-secrets.properties" "${PROXY_OUT_DIR:-/rendered/proxy}/proxy.properties"
# The proxy answers clients with the cluster's id and refuses a controller of another cluster. User:proxy has no
# Alter on the cluster, so no controller tells it the id (DescribeCluster): it comes from the ConfigMap the storage is formatted with.
printf 'cluster.id=%s\n' "${KAFKA_CLUSTER_ID:?KAFKA_CLUSTER_ID must be set (ConfigMap kafka-cluster-id)}" >> "${PROXY_OUT_DIR:-/rendered/proxy}/proxy.properties"
echo "render.sh: wrote the configuration of $POD_NAME (node.id $ordinal, proxy node.id $((1000 + ordinal)))"
