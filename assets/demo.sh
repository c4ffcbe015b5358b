# The demo oino opens on when given no commands. Each call is a line, named by the one-word
# comment above it.

# clock
while true; do printf '\033[1m%s\033[0m  the clock ticks\n' "$(date +%T)"; sleep 1; done
# build
for i in $(seq 0 5 100); do printf '\rbuilding [%-20s] %3d%%' "$(printf '#%.0s' $(seq 0 $((i / 5))) | cut -c2-)" "$i"; sleep 0.3; done; printf '\n\033[32mbuild finished\033[0m\n'
# server
echo 'dev server listening on http://localhost:8080 (a pretend one)'; while true; do sleep 2; echo "$(date +%T) GET / 200 in 3 ms"; done
# tests
echo 'running tests...'; sleep 2; printf '\033[31mtest parse_config failed: expected 2, got 3\033[0m\n'; exit 1
# colors
printf '\033[31mred \033[32mgreen \033[33myellow \033[34mblue \033[35mmagenta \033[36mcyan\033[0m\n'; ls --color=always /
# echo
echo 'type a line and press Enter (i to focus this pane, Ctrl-A to come back)'; cat
