# A CSI node plugin run by Nomad and published through plugfs.
#
# Every allocation of this job puts its socket in its own allocation
# directory, so two allocations on one host (a rolling update, a restore
# after an agent restart) never share a socket path.  A poststart task
# registers the allocation with plugfs once the socket accepts connections;
# a poststop task deregisters it.  Consumers on the host use the stable path
#
#   /run/plugfs/plugins/csi-node/hostpath/csi.sock
#
# which always leads to the most recent live allocation.
#
# Needs on every client: plugfs running (contrib/plugfs.service), and the
# raw_exec driver enabled for the two hook tasks, which run the plugfs CLI on
# the host (they see host paths, so NOMAD_ALLOC_DIR below is the host path of
# the allocation directory):
#
#   plugin "raw_exec" { config { enabled = true } }
#
# Recommended in /etc/plugfs/plugfs.ini, so that only sockets inside Nomad
# allocation directories can be registered:
#
#   [registry]
#   socket_roots = /var/lib/nomad/alloc

job "csi-hostpath-node" {
  type = "system" # a node plugin runs on every client

  update {
    max_parallel = 1
    min_healthy_time = "10s"
  }

  group "node" {
    restart {
      attempts = 3
      interval = "5m"
      delay    = "10s"
      mode     = "delay"
    }

    # The plugin itself.  Inside the container the allocation directory is
    # /alloc; on the host it is NOMAD_ALLOC_DIR of the raw_exec tasks.
    task "plugin" {
      driver = "docker"

      config {
        image      = "registry.k8s.io/sig-storage/hostpathplugin:v1.11.0"
        privileged = true
        args = [
          "--drivername=hostpath.csi.k8s.io",
          "--endpoint=unix:///alloc/csi.sock",
          "--nodeid=${node.unique.name}",
        ]
      }

      resources {
        cpu    = 100
        memory = 128
      }
    }

    # Registers this allocation once its socket is there.  A failure (plugfs
    # not running: exit 3) is retried by the restart block above.
    task "plugfs-register" {
      lifecycle {
        hook    = "poststart"
        sidecar = false
      }

      driver = "raw_exec"

      template {
        destination = "local/register.sh"
        perms       = "0755"
        data        = <<-EOT
          #!/bin/sh
          # Waits (120 s) for the plugin's socket, then registers it.
          sock="$PLUGFS_SOCKET"
          i=0
          while [ "$i" -lt 120 ]; do
            if [ -S "$sock" ]; then
              exec /usr/bin/plugfs register --type csi-node --name hostpath \
                --alloc "$NOMAD_ALLOC_ID" --socket "$sock" \
                --kind node --version 1.11.0
            fi
            i=$((i + 1))
            sleep 1
          done
          echo "plugfs-register: no socket at $sock after 120 s" >&2
          exit 1
          EOT
      }

      config {
        command = "local/register.sh"
      }

      # Nomad expands NOMAD_ALLOC_DIR; for raw_exec it is the host path of
      # the allocation directory, where the plugin container's /alloc is.
      env {
        PLUGFS_SOCKET = "${NOMAD_ALLOC_DIR}/csi.sock"
      }

      resources {
        cpu    = 20
        memory = 32
      }
    }

    # Deregisters this allocation when its tasks have stopped.  The stable
    # path then leads to the next most recent allocation, if any.
    # Deregistering an allocation that is not registered succeeds.
    task "plugfs-deregister" {
      lifecycle {
        hook = "poststop"
      }

      driver = "raw_exec"

      config {
        command = "/usr/bin/plugfs"
        args = [
          "deregister", "--type", "csi-node", "--name", "hostpath",
          "--alloc", "${NOMAD_ALLOC_ID}",
        ]
      }

      resources {
        cpu    = 20
        memory = 32
      }
    }
  }
}
