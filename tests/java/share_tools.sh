# Sourced by tools.sh (uses its B, TOOL, OUT, SUF and t/has/ok/bad/show): share groups (KIP-932)
# through Kafka's CLI tools: kafka-configs on a share group's configs, kafka-console-share-consumer,
# and kafka-share-groups --list / --describe (offsets, --state, --members) / --reset-offsets /
# --delete-offsets / --delete, output shapes as Kafka 4.4 prints them.
#
# A broker that does not advertise ShareGroupHeartbeat (API 76) fails the first check.

SCEN=share_groups
SHT=tools-share-$SUF
SHG=tools-share-g-$SUF
SHN=40

share_groups_advertised() {
    t kafka-broker-api-versions --bootstrap-server "$B" && has "ShareGroupHeartbeat\(76\): 1"
}

# LAG column: DescribeShareGroupOffsets v1 (Kafka 4.4) reports it; with v0 only (what Skiff
# serves) the tool prints "-". share_lag N prints the pattern for an expected lag of N.
share_lag() { if [[ $SH_LAG == 1 ]]; then echo "$1"; else echo "-"; fi; }

# Waits (20 s at most) until `kafka-share-groups ARGS...` prints something matching PATTERN.
share_describe_until() {
    local pat=$1; shift
    for _ in $(seq 40); do
        if t kafka-share-groups --bootstrap-server "$B" "$@" && has "$pat"; then return 0; fi
        sleep 0.5
    done
    return 1
}

if ! share_groups_advertised; then
    bad "share groups: the broker does not advertise ShareGroupHeartbeat (API 76)"
else
    SH_LAG=0
    has "DescribeShareGroupOffsets\(90\): 0 to [1-9]" && SH_LAG=1
    # A share group starts at the log end unless share.auto.offset.reset=earliest (group config).
    if t kafka-configs --bootstrap-server "$B" --alter --entity-type groups --entity-name "$SHG" \
            --add-config share.auto.offset.reset=earliest && has "Completed updating config for group $SHG" \
            && described --entity-type groups --entity-name "$SHG" -- \
                "share.auto.offset.reset=earliest sensitive=false synonyms=\{DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest\}"; then
        ok "kafka-configs --alter groups share.auto.offset.reset=earliest (default latest)"
    else show; bad "kafka-configs share group config"; fi

    for i in $(seq 1 $SHN); do echo "share-$i"; done >"$OUT/share-in.txt"
    if t kafka-topics --bootstrap-server "$B" --create --topic "$SHT" --partitions 1 --replication-factor 1 \
            && timeout "$T_TIMEOUT" $TOOL kafka-console-producer --bootstrap-server "$B" --topic "$SHT" \
                <"$OUT/share-in.txt" >"$OUT/last.txt" 2>&1 \
            && t kafka-console-share-consumer --bootstrap-server "$B" --topic "$SHT" --group "$SHG" \
                --max-messages "$SHN" --timeout-ms 30000 \
            && { grep -E '^share-[0-9]+$' "$OUT/last.txt" | sort -V >"$OUT/share-out.txt" || true; } \
            && diff -q "$OUT/share-in.txt" "$OUT/share-out.txt" >/dev/null; then
        ok "kafka-console-share-consumer --group read the $SHN records"
    else show; bad "kafka-console-share-consumer"; fi

    if t kafka-share-groups --bootstrap-server "$B" --list && has "^$SHG\$"; then
        ok "kafka-share-groups --list"
    else show; bad "kafka-share-groups --list"; fi
    if t kafka-share-groups --bootstrap-server "$B" --list --state \
            && has "^GROUP[[:space:]]+STATE\$" && has "^$SHG[[:space:]]+Empty\$"; then
        ok "kafka-share-groups --list --state: Empty"
    else show; bad "kafka-share-groups --list --state"; fi
    # Everything acknowledged (the console consumer accepts what it prints): lag 0.
    if share_describe_until "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+[0-9]+[[:space:]]+$(share_lag 0)\$" \
            --describe --group "$SHG" \
            && has "^GROUP[[:space:]]+TOPIC[[:space:]]+PARTITION[[:space:]]+START-OFFSET[[:space:]]+LAG\$"; then
        ok "kafka-share-groups --describe (offsets): lag 0 after the console consumer"
    else show; bad "kafka-share-groups --describe"; fi
    if t kafka-share-groups --bootstrap-server "$B" --describe --group "$SHG" --offsets --verbose \
            && has "^GROUP[[:space:]]+TOPIC[[:space:]]+PARTITION[[:space:]]+LEADER-EPOCH[[:space:]]+START-OFFSET[[:space:]]+LAG\$" \
            && has "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+"; then
        ok "kafka-share-groups --describe --offsets --verbose: LEADER-EPOCH column"
    else show; bad "kafka-share-groups --describe --offsets --verbose"; fi
    if t kafka-share-groups --bootstrap-server "$B" --describe --group "$SHG" --state \
            && has "^GROUP[[:space:]]+COORDINATOR \(ID\)[[:space:]]+STATE[[:space:]]+#MEMBERS\$" \
            && has "^$SHG[[:space:]]+$B[[:space:]]+\(1\)[[:space:]]+Empty[[:space:]]+0\$"; then
        ok "kafka-share-groups --describe --state: coordinator 1, Empty, 0 members"
    else show; bad "kafka-share-groups --describe --state"; fi
    if t kafka-share-groups --bootstrap-server "$B" --describe --group "$SHG" --members \
            && has "Share group '$SHG' has no active members."; then
        ok "kafka-share-groups --describe --members: no active members"
    else show; bad "kafka-share-groups --describe --members (empty)"; fi

    # While a member is active: --members and --state show it, and offsets cannot be reset.
    timeout "$T_TIMEOUT" $TOOL kafka-console-share-consumer --bootstrap-server "$B" --topic "$SHT" \
        --group "$SHG" --timeout-ms 20000 --command-property client.id=tools-share-client \
        >"$OUT/share-bg.txt" 2>&1 &
    share_bg=$!
    if share_describe_until "^$SHG[[:space:]]+[A-Za-z0-9_-]{22}[[:space:]]+/127.0.0.1[[:space:]]+tools-share-client[[:space:]]+1[[:space:]]+$SHT:0\$" \
            --describe --group "$SHG" --members \
            && has "^GROUP[[:space:]]+CONSUMER-ID[[:space:]]+HOST[[:space:]]+CLIENT-ID[[:space:]]+#PARTITIONS[[:space:]]+ASSIGNMENT\$"; then
        ok "kafka-share-groups --describe --members: the active member, its client id and assignment"
    else show; bad "kafka-share-groups --describe --members (active)"; fi
    if t kafka-share-groups --bootstrap-server "$B" --describe --group "$SHG" --state --verbose \
            && has "^GROUP[[:space:]]+COORDINATOR \(ID\)[[:space:]]+STATE[[:space:]]+GROUP-EPOCH[[:space:]]+ASSIGNMENT-EPOCH[[:space:]]+#MEMBERS\$" \
            && has "^$SHG[[:space:]]+$B[[:space:]]+\(1\)[[:space:]]+Stable[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+1\$"; then
        ok "kafka-share-groups --describe --state --verbose: Stable, 1 member, epochs"
    else show; bad "kafka-share-groups --describe --state --verbose (active)"; fi
    if ! t kafka-share-groups --bootstrap-server "$B" --reset-offsets --group "$SHG" --topic "$SHT" \
            --to-earliest --execute 2>/dev/null && has "Share group '$SHG' is not empty."; then
        ok "kafka-share-groups --reset-offsets refused while the group has a member"
    else show; bad "kafka-share-groups --reset-offsets on an active group"; fi
    kill "$share_bg" 2>/dev/null || true
    wait "$share_bg" 2>/dev/null || true

    # Empty again (the member's session ends when its process is killed: wait for Empty).
    if share_describe_until "^$SHG[[:space:]]+$B[[:space:]]+\(1\)[[:space:]]+Empty[[:space:]]+0\$" \
            --describe --group "$SHG" --state; then
        ok "kafka-share-groups: group Empty after the member went away"
    else show; bad "kafka-share-groups: group not Empty after the member went away"; fi
    if t kafka-share-groups --bootstrap-server "$B" --reset-offsets --group "$SHG" --topic "$SHT" \
            --to-earliest --dry-run \
            && has "^GROUP[[:space:]]+TOPIC[[:space:]]+PARTITION[[:space:]]+NEW-OFFSET\$" \
            && has "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+0\$" \
            && t kafka-share-groups --bootstrap-server "$B" --reset-offsets --group "$SHG" --topic "$SHT" \
                --to-earliest --execute \
            && has "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+0\$" \
            && share_describe_until "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+0[[:space:]]+$(share_lag $SHN)\$" \
                --describe --group "$SHG"; then
        ok "kafka-share-groups --reset-offsets --to-earliest (--dry-run, --execute): start 0, lag $SHN"
    else show; bad "kafka-share-groups --reset-offsets --to-earliest"; fi
    if t kafka-share-groups --bootstrap-server "$B" --reset-offsets --group "$SHG" --topic "$SHT" \
            --to-offset 10 --execute && has "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+10\$" \
            && share_describe_until "^$SHG[[:space:]]+$SHT[[:space:]]+0[[:space:]]+10[[:space:]]+$(share_lag $((SHN - 10)))\$" \
                --describe --group "$SHG"; then
        ok "kafka-share-groups --reset-offsets --to-offset 10: lag $((SHN - 10))"
    else show; bad "kafka-share-groups --reset-offsets --to-offset"; fi
    if t kafka-share-groups --bootstrap-server "$B" --delete-offsets --group "$SHG" --topic "$SHT" \
            && has "^TOPIC[[:space:]]+STATUS\$" && has "^$SHT[[:space:]]+Successful\$" \
            && t kafka-share-groups --bootstrap-server "$B" --describe --group "$SHG" \
            && has "Share group '$SHG' has no offset information."; then
        ok "kafka-share-groups --delete-offsets: Successful, then no offset information"
    else show; bad "kafka-share-groups --delete-offsets"; fi
    if t kafka-share-groups --bootstrap-server "$B" --delete --group "$SHG" \
            && has "Deletion of requested share groups \('$SHG'\) was successful." \
            && t kafka-share-groups --bootstrap-server "$B" --list && ! has "^$SHG\$"; then
        ok "kafka-share-groups --delete: deleted and no longer listed"
    else show; bad "kafka-share-groups --delete"; fi
    # Kafka 4.4's tool prints the error for a group that is not there but exits 0.
    if t kafka-share-groups --bootstrap-server "$B" --describe --group "$SHG" \
            && has "GroupIdNotFoundException: Group $SHG not found."; then
        ok "kafka-share-groups --describe of a deleted group: GroupIdNotFoundException"
    else show; bad "kafka-share-groups --describe of a deleted group"; fi
fi
